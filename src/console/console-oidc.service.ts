import { Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import * as oidc from 'openid-client';
import { AppConfig, ConsoleOidcConfig } from '../config/app-config';
import { ConsoleAuthService, consoleUrl } from './console-auth.service';
import { OidcRefused, OidcUnavailable } from './oidc-errors';

/** The browser's handle on a sign-in under way (`<issued-at>.<random>.<MAC>`): HttpOnly, only for /console/oidc, 10 minutes. */
export const OIDC_COOKIE = 'console_oidc';
export const OIDC_LOGIN_TTL_S = 10 * 60;
/** Where the provider sends the operator back; register `<PUBLIC_URL>/console/oidc/callback` with it. */
export const OIDC_CALLBACK_PATH = '/console/oidc/callback';
/**
 * Where the provider sends the browser back after signing the operator out there (RP-Initiated Logout);
 * register `<PUBLIC_URL>/console/sign-in` with it as post-logout redirect URI.
 */
export const OIDC_SIGNED_OUT_PATH = '/console/sign-in';
/** Discovery and the token request give up after this long (the operator is waiting). */
const OIDC_TIMEOUT_S = 10;
/** Issued-at (Unix seconds), 32 random bytes, and the MAC of both (HMAC-SHA-256), base64url. */
const HANDLE = /^(\d{1,12}\.[A-Za-z0-9_-]{43})\.([A-Za-z0-9_-]{43})$/;
const STALE = 'This sign-in is expired, already used, or was started in another browser. Start again.';

/** State, nonce and code verifier all follow from the cookie's value, each under a label of its own. */
const derive = (label: 'state' | 'nonce' | 'verifier', handle: string) => createHash('sha256').update(`console-oidc-${label}:${handle}`).digest('base64url');

/**
 * The console's sign-in through the company's OpenID provider (CONSOLE_OIDC_*, spec §14), with openid-client:
 * discovery, the authorization code flow with PKCE (S256), state and nonce, and the ID token's validation.
 *
 * Starting a sign-in stores nothing (the start is public: it must not let anyone fill a table). The browser
 * holds a handle in the `console_oidc` cookie that proves itself: its issue time and a random value, with
 * their HMAC under a key derived from CONSOLE_OIDC_CLIENT_SECRET (the same on every instance). The request's
 * state, nonce and code verifier are hashes of the handle under their own labels. The callback checks the MAC
 * and the 10 minutes before it asks the provider anything; single use is the provider's: an authorization
 * code is redeemed once (RFC 6749 4.1.2), and PKCE binds it to this handle. It accepts a verified email at an
 * allowed domain only, then makes the same console session as a link does (ConsoleAuthService).
 *
 * Discovery never holds up the start: it is tried once in the background when the service starts, and a
 * provider that cannot be reached then is logged and tried again at the next sign-in, which answers 503
 * while it stays down.
 */
@Injectable()
export class ConsoleOidcService implements OnApplicationBootstrap {
  private readonly logger = new Logger('ConsoleOidc');
  private discovery?: Promise<oidc.Configuration>;

  constructor(
    private readonly config: AppConfig,
    private readonly auth: ConsoleAuthService,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {}

  /** The provider's host, for the sign-in button; undefined when the console signs in by links only. */
  get providerName(): string | undefined {
    return this.config.consoleOidc?.issuer.host;
  }

  get redirectUri(): string {
    return consoleUrl(this.config, OIDC_CALLBACK_PATH);
  }

  /** Cookie attributes of `console_oidc`: Lax, since the provider's redirect back is a cross-site navigation. */
  cookieOptions() {
    return {
      httpOnly: true,
      sameSite: 'lax' as const,
      secure: this.config.publicUrl?.protocol === 'https:',
      path: '/console/oidc',
      maxAge: OIDC_LOGIN_TTL_S * 1000,
    };
  }

  onApplicationBootstrap(): void {
    // The HTTP server only: a CLI command has no sign-in page to prepare.
    if (this.config.consoleOidc && this.adapterHost?.httpAdapter) void this.provider().catch(() => undefined);
  }

  /**
   * A new sign-in: the value for the `console_oidc` cookie and the provider's authorization URL to send the
   * browser to. OidcUnavailable when the provider cannot be reached.
   */
  async start(): Promise<{ handle: string; location: string }> {
    const provider = await this.provider();
    const signed = `${Math.floor(Date.now() / 1000)}.${randomBytes(32).toString('base64url')}`;
    const handle = `${signed}.${this.mac(signed)}`;
    const location = oidc.buildAuthorizationUrl(provider, {
      redirect_uri: this.redirectUri,
      response_type: 'code',
      scope: 'openid email',
      state: derive('state', handle),
      nonce: derive('nonce', handle),
      code_challenge: await oidc.calculatePKCECodeChallenge(derive('verifier', handle)),
      code_challenge_method: 'S256',
    });
    return { handle, location: location.href };
  }

  /**
   * The provider's answer (`search`: the callback's query string) for the sign-in of the cookie's `handle`:
   * a new console session's token. OidcRefused (nothing made) when the handle is missing, forged or expired
   * (the provider is not asked), when the answer does not match it, when the provider refuses the code (used
   * already, or not this handle's), or when the account is not an allowed operator; OidcUnavailable when the
   * provider cannot be reached.
   */
  async finish(handle: string | undefined, search: string, requestId: string | null): Promise<string> {
    const settings = this.config.consoleOidc!;
    if (!handle || !this.isLive(handle)) throw new OidcRefused(STALE);
    const provider = await this.provider();
    // The URL the provider was told to send the browser to (never the request's Host header), with its answer.
    const callback = new URL(this.redirectUri);
    callback.search = search;
    let claims: EmailClaims | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(provider, callback, {
        pkceCodeVerifier: derive('verifier', handle),
        expectedState: derive('state', handle),
        expectedNonce: derive('nonce', handle),
        idTokenExpected: true,
      });
      claims = tokens.claims();
      // A provider that keeps scope claims out of the ID token (OpenID Connect Core 5.4, when an access token
      // is issued) answers them at its UserInfo endpoint, for the same subject.
      if (claims && claims.email === undefined) claims = await oidc.fetchUserInfo(provider, tokens.access_token, claims.sub);
    } catch (err) {
      throw this.callbackFailure(err);
    }
    const email = operatorEmail(claims, settings);
    return this.auth.signInVerified(email, 'oidc', requestId);
  }

  /**
   * Where the browser goes once a console session made through the provider has ended here: the provider's
   * end-session endpoint, to end the operator's session there too and come back to the sign-in page.
   * Undefined (the sign-in page at once) without OpenID sign-in, when the provider's discovery document
   * advertises no end_session_endpoint, or when the provider cannot be reached.
   */
  async endSessionUrl(): Promise<string | undefined> {
    if (!this.config.consoleOidc) return undefined;
    const provider = await this.provider().catch(() => undefined);
    return provider && endSessionUrl(provider, consoleUrl(this.config, OIDC_SIGNED_OUT_PATH));
  }

  /** The handle's MAC: HMAC-SHA-256 under a key of its own, derived from the client secret (HKDF, labelled). */
  private mac(signed: string): string {
    const key = Buffer.from(hkdfSync('sha256', this.config.consoleOidc!.clientSecret, '', 'console-oidc-handle', 32));
    return createHmac('sha256', key).update(signed).digest('base64url');
  }

  /** A handle this service issued (its MAC, compared in constant time) less than 10 minutes ago. */
  private isLive(handle: string): boolean {
    const [, signed, mac] = HANDLE.exec(handle) ?? [];
    if (!signed || !timingSafeEqual(Buffer.from(mac), Buffer.from(this.mac(signed)))) return false;
    return Date.now() / 1000 - Number(signed.slice(0, signed.indexOf('.'))) <= OIDC_LOGIN_TTL_S;
  }

  /** The provider's configuration, discovered once; a failed discovery is logged and tried again next time. */
  private provider(): Promise<oidc.Configuration> {
    const settings = this.config.consoleOidc!;
    this.discovery ??= oidc
      .discovery(settings.issuer, settings.clientId, undefined, oidc.ClientSecretBasic(settings.clientSecret), {
        timeout: OIDC_TIMEOUT_S,
        execute: settings.issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
      })
      .catch((err: Error) => {
        this.discovery = undefined;
        this.logger.warn({ msg: 'console OpenID provider: discovery failed; sign-in by OpenID answers 503 until it succeeds (tried again at the next sign-in)', issuer: settings.issuer.href, err: describe(err) });
        throw new OidcUnavailable();
      });
    return this.discovery;
  }

  /** An error of the code exchange: the provider unreachable or failing (503), or its answer refused (4xx). */
  private callbackFailure(err: unknown): Error {
    if (isUnreachable(err)) {
      this.logger.warn({ msg: 'console OpenID provider: the token request failed', err: describe(err) });
      return new OidcUnavailable();
    }
    if (err instanceof oidc.AuthorizationResponseError) {
      return new OidcRefused(`The OpenID provider did not sign you in (${err.error}). Start again.`);
    }
    // The provider refuses the code: redeemed already (a replayed callback), expired, or issued for another
    // handle's code verifier. Single use is the provider's, so this is the operator's "already used".
    if (err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') {
      this.logger.log({ msg: 'console OpenID sign-in refused: the provider did not accept the code (invalid_grant)', err: describe(err) });
      return new OidcRefused(STALE);
    }
    this.logger.log({ msg: 'console OpenID sign-in refused: the answer does not match this sign-in', err: describe(err) });
    return new OidcRefused('The answer from the OpenID provider does not match this sign-in (state, code or ID token). Nobody was signed in. Start again.');
  }
}

/**
 * The provider's end-session URL (RP-Initiated Logout 1.0) with client_id and post_logout_redirect_uri, and no
 * id_token_hint (the console keeps no ID token: docs/decisions.md); undefined when its discovery document
 * advertises no end_session_endpoint.
 */
export function endSessionUrl(provider: oidc.Configuration, postLogoutRedirectUri: string): string | undefined {
  if (!provider.serverMetadata().end_session_endpoint) return undefined;
  return oidc.buildEndSessionUrl(provider, { post_logout_redirect_uri: postLogoutRedirectUri }).href;
}

type EmailClaims = { sub: string; email?: unknown; email_verified?: unknown };

/** The operator an ID token (or the UserInfo of its subject) names: its email, verified by the provider, at one of the allowed domains exactly. */
export function operatorEmail(claims: EmailClaims | undefined, settings: Pick<ConsoleOidcConfig, 'allowedDomains'>): string {
  const email = claims?.email;
  if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320) {
    throw new OidcRefused('The OpenID provider did not give an email address for this account, so the console cannot tell who you are.', 403);
  }
  if (claims!.email_verified !== true) {
    throw new OidcRefused(`The OpenID provider has not verified the email address ${email}. Nobody was signed in.`, 403);
  }
  const domain = email.slice(email.indexOf('@') + 1).toLowerCase();
  if (!settings.allowedDomains.includes(domain)) {
    throw new OidcRefused(`${email} is not at a domain allowed to use the console (CONSOLE_OIDC_ALLOWED_DOMAINS). Nobody was signed in.`, 403);
  }
  return email.toLowerCase();
}

/**
 * Network failures (fetch's `TypeError: fetch failed`), timeouts and the provider's own 5xx, also when
 * openid-client has wrapped them (it wraps an error it does not recognise, e.g. one of another realm).
 */
function isUnreachable(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { name, message, status } = e as { name?: unknown; message?: unknown; status?: unknown };
    if (name === 'TypeError' && message === 'fetch failed') return true;
    if (name === 'TimeoutError' || name === 'AbortError') return true;
    if (typeof status === 'number' && status >= 500) return true;
  }
  return false;
}

/** For the log: the error's name, code and message, and its cause's (never a token: openid-client's messages name none). */
function describe(err: unknown): Record<string, unknown> {
  if (typeof err !== 'object' || err === null) return { message: String(err) };
  const { name, code, message, cause } = err as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
  const causeMessage = typeof cause === 'object' && cause !== null ? (cause as { message?: unknown }).message : undefined;
  return { name, code, message, cause: typeof causeMessage === 'string' ? causeMessage : undefined };
}
