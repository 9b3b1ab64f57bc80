import { Injectable, Logger } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { createRemoteJWKSet, customFetch, FetchImplementation, jwtVerify, JWTVerifyGetKey } from 'jose';
import { Strategy } from 'passport-custom';
import { AppException, unauthenticated } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig, AuthJwtConfig, authJwtWarning } from '../config/app-config';
import { IdentityRepository } from './identity.repository';

/** Three base64url segments (the last one empty for `alg: none`, which is then refused). A session token has no dot. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
// Far above any access token (an RS256 one with a few claims is ~800 characters); refused before any parsing.
const MAX_JWT_LENGTH = 8192;
// Only asymmetric algorithms: `none`, and HS256 "signed" with the public key (the classic confusion), are refused.
const ALGORITHMS = ['RS256', 'ES256'];
const CLOCK_TOLERANCE_S = 60;
// spec §3: an unknown `kid` re-fetches the JWKS only when the last fetch is at least this old (jose's
// `cooldownDuration`: it re-fetches when now >= last successful fetch + cooldown).
const REFETCH_COOLDOWN_MS = 30_000;
// Retired keys stop being trusted after at most this long: the JWKS is then re-fetched in the background.
const BACKGROUND_REFRESH_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;
// After a failed fetch, tokens with an uncached kid answer 503 at once for this long instead of each fetching
// again: a failing JWKS gets one request per 5 s from an instance, whatever the traffic.
export const JWKS_FAILURE_CACHE_MS = 5_000;

/** The bearer credential when it has the shape of a JWT (never the `session` cookie: JWTs come as bearer). */
export function bearerJwt(req: Request): string | undefined {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  return token && JWT_SHAPE.test(token) ? token : undefined;
}

/** The JWKS could not give a key for a kid it has not cached: its fetch failed or it answered no key set. */
class JwksUnavailable extends Error {}

/** A fetch not made: the last one failed less than JWKS_FAILURE_CACHE_MS ago. */
class JwksRecentlyFailed extends Error {}

/**
 * The web app's own access tokens (AUTH_JWT_*, spec §3), beside the session strategy; the global guard
 * (auth.guard.ts) hands it the requests whose bearer credential is a JWT when JWTs are enabled. The caller
 * is the user whose `external_id` is the token's `sub`; memberships and roles are this service's, as for a
 * session. The token itself is never logged.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  private readonly logger = new Logger('JwtAuth');
  private readonly settings?: AuthJwtConfig;
  private readonly keys?: JWTVerifyGetKey;

  constructor(
    config: AppConfig,
    private readonly identity: IdentityRepository,
  ) {
    super();
    this.settings = config.authJwt;
    if (!this.settings) return;
    const warning = authJwtWarning(config);
    if (warning) this.logger.warn(warning);
    this.keys = remoteKeys(this.settings.jwksUrl, (err) =>
      this.logger.warn({ msg: 'background JWKS refresh failed; the cached keys stay in use', jwks: this.jwksName(), reason: reasonOf(err) }),
    );
  }

  /** True when JWTs are enabled and the request's bearer credential is one: this strategy then decides. */
  accepts(req: Request): boolean {
    return this.keys !== undefined && bearerJwt(req) !== undefined;
  }

  async validate(req: Request): Promise<AuthUser> {
    const token = bearerJwt(req);
    if (!token || token.length > MAX_JWT_LENGTH || !this.keys) throw unauthenticated();
    const sub = await this.verifiedSubject(token, this.keys);
    const user = await this.identity.userByExternalId(sub);
    if (!user) {
      this.logger.debug({ msg: 'JWT refused', reason: 'no user with that external_id' });
      throw unauthenticated();
    }
    return user;
  }

  /**
   * The token's `sub` once its signature and claims hold. 401 for anything wrong with the token; 503
   * `jwks_unavailable` when its key is not cached and the JWKS cannot be fetched: the token may well be
   * good, so the client should retry rather than sign the user out.
   */
  private async verifiedSubject(token: string, keys: JWTVerifyGetKey): Promise<string> {
    try {
      const { payload } = await jwtVerify(token, keys, {
        algorithms: ALGORITHMS,
        issuer: this.settings?.issuer,
        audience: this.settings?.audience,
        clockTolerance: CLOCK_TOLERANCE_S,
        // A token without an expiry would be good forever.
        requiredClaims: ['sub', 'exp'],
      });
      // jose has checked that `sub` is a string; external ids are 1 to 255 characters.
      if (!payload.sub || payload.sub.length > 255) throw new Error('sub is empty or longer than an external_id');
      return payload.sub;
    } catch (err) {
      if (err instanceof JwksUnavailable) {
        // Warned once per failed fetch; the refusals within JWKS_FAILURE_CACHE_MS after it are not news.
        const level = err.cause instanceof JwksRecentlyFailed ? 'debug' : 'warn';
        this.logger[level]({ msg: 'JWKS could not be fetched for an unknown key id', jwks: this.jwksName(), reason: reasonOf(err.cause) });
        throw new AppException('jwks_unavailable', 'The keys that sign this token could not be fetched. Try again shortly.');
      }
      this.logger.debug({ msg: 'JWT refused', reason: reasonOf(err) });
      throw unauthenticated();
    }
  }

  /** The JWKS URL without its query, which might carry a credential. */
  private jwksName(): string {
    const url = this.settings!.jwksUrl;
    return `${url.origin}${url.pathname}`;
  }
}

/**
 * jose's remote key set, with the cache spec §3 asks for: keys are kept (no expiry: `cacheMaxAge` Infinity,
 * so a JWKS outage never turns away a token whose key is cached) and fetched again on an unknown `kid` when
 * the last fetch is at least 30 s old; within that, an unknown `kid` is refused without a fetch. Every
 * 10 minutes a verification also starts a refresh it does not wait for, so a key the web app retired stops
 * being trusted. Failures to produce a key that are not the token's fault come out as JwksUnavailable.
 *
 * One fetch at a time: concurrent verifications that need the JWKS wait for the same request (jose's own
 * single flight). A failure is remembered for JWKS_FAILURE_CACHE_MS: meanwhile the fetch function refuses
 * without a request, so a JWKS outage under load costs one request per few seconds, not one per token.
 */
function remoteKeys(url: URL, onBackgroundFailure: (err: unknown) => void): JWTVerifyGetKey {
  let failedAt = -Infinity;
  const noteFailure = () => (failedAt = Date.now());
  const remote = createRemoteJWKSet(url, {
    cooldownDuration: REFETCH_COOLDOWN_MS,
    cacheMaxAge: Infinity,
    timeoutDuration: FETCH_TIMEOUT_MS,
    [customFetch]: ((input, init) => {
      if (Date.now() - failedAt < JWKS_FAILURE_CACHE_MS) return Promise.reject(new JwksRecentlyFailed('the last JWKS fetch failed moments ago'));
      return fetch(input, init);
    }) satisfies FetchImplementation,
  });
  let lastRefresh = Date.now();
  return async (header, token) => {
    if (Date.now() - lastRefresh >= BACKGROUND_REFRESH_MS && !remote.reloading) {
      lastRefresh = Date.now();
      remote.reload().catch((err) => {
        if (!(err instanceof JwksRecentlyFailed)) noteFailure();
        onBackgroundFailure(err);
      });
    }
    try {
      return await remote(header, token);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // No key with that kid (also after a re-fetch, or within the cooldown), or several without a kid: the token's fault.
      if (code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') throw err;
      // Only a fetch that was made counts, so the window ends JWKS_FAILURE_CACHE_MS after the last real failure.
      if (!(err instanceof JwksRecentlyFailed)) noteFailure();
      throw new JwksUnavailable('JWKS unavailable', { cause: err });
    }
  };
}

/** A short, token-free reason for the log: jose's error code, or the network error's code. */
function reasonOf(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string } } | undefined;
  return [e?.code, e?.cause?.code, e?.message].filter(Boolean).join(': ') || 'unknown';
}
