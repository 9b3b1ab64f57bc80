import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { ConsoleAuthRepository } from './console-auth.repository';

export const CONSOLE_COOKIE = 'console_session';
/** A console session lasts 12 hours (spec §14). */
export const CONSOLE_SESSION_TTL_S = 12 * 3600;
/** Where a one-time link leads; its token is the query's `token`. */
export const SIGN_IN_LINK_PATH = '/console/sign-in/link';
export const DEFAULT_LINK_TTL_MINUTES = 15;
export const MAX_LINK_TTL_MINUTES = 24 * 60;
// Tokens are 43 base64url characters; anything else is not worth a database round trip.
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** The operator behind a console request, and the CSRF token its forms carry. */
export interface Operator {
  email: string;
  csrfToken: string;
  /** The audit log's actor for this operator's changes. */
  actor: AuditActor;
}

const sha256 = (token: string) => createHash('sha256').update(token).digest();
const newToken = () => randomBytes(32).toString('base64url');

/** Where a console URL points: PUBLIC_URL when set, else the service on localhost. */
export function consoleUrl(config: AppConfig, path: string): string {
  return new URL(path, config.publicUrl ?? `http://localhost:${config.port}`).href;
}

/**
 * Operators' sign-in to the console: one-time links (only their hash stored), sessions of their own (never
 * the API's), and the CSRF token of each session. That token is a hash of the session token under a label
 * of its own: a page can carry it without revealing the cookie (HttpOnly), it needs no storage and is the
 * same on every instance, and a forger, who cannot read the cookie, cannot compute it (a signed double
 * submit, with the session cookie as the secret).
 */
@Injectable()
export class ConsoleAuthService {
  constructor(
    private readonly repository: ConsoleAuthRepository,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /** `console:link`: a URL that signs `email` in once, within `ttlMinutes`. */
  async createLink(email: string, ttlMinutes: number): Promise<{ url: string; expiresAt: Date }> {
    const token = newToken();
    const expiresAt = await this.repository.insertLink(sha256(token), email, ttlMinutes);
    return { url: consoleUrl(this.config, `${SIGN_IN_LINK_PATH}?token=${token}`), expiresAt };
  }

  /** Redeems a link: a new session's token, or undefined when the link is unknown, expired or used. */
  async redeemLink(token: unknown, requestId: string | null): Promise<string | undefined> {
    if (typeof token !== 'string' || !TOKEN.test(token)) return undefined;
    return transaction(this.db, async (m) => {
      const email = await this.repository.redeemLink(m, sha256(token));
      return email === undefined ? undefined : this.newSession(m, email, 'link', requestId);
    });
  }

  /**
   * Signs in an operator whose identity something else has established (the OpenID provider's verified
   * email, console-oidc.service.ts): a new session's token.
   */
  signInVerified(email: string, via: 'oidc', requestId: string | null): Promise<string> {
    return transaction(this.db, (m) => this.newSession(m, email, via, requestId));
  }

  /** The one way a console session is made: stored as its hash, 12 hours, audited as `operator.signed_in`. */
  private async newSession(m: EntityManager, email: string, via: 'link' | 'oidc', requestId: string | null): Promise<string> {
    const session = newToken();
    await this.repository.insertSession(m, sha256(session), email, via, CONSOLE_SESSION_TTL_S);
    await this.audit.record(m, { actor: `operator:${email}`, requestId }, { action: 'operator.signed_in', organisationId: null, after: { via } });
    return session;
  }

  /** The operator of a console session token, or undefined (unknown, expired, signed out). */
  async operator(token: string | undefined, requestId: string | null): Promise<Operator | undefined> {
    if (!token || !TOKEN.test(token)) return undefined;
    const session = await this.repository.liveSession(sha256(token));
    if (!session) return undefined;
    return { email: session.email, csrfToken: this.csrfToken(token), actor: { actor: `operator:${session.email}`, requestId } };
  }

  csrfMatches(sessionToken: string, given: unknown): boolean {
    if (typeof given !== 'string') return false;
    const expected = Buffer.from(this.csrfToken(sessionToken));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  /** Ends a console session: how it was made (`link` or `oidc`), or undefined when there was none. */
  async signOut(token: string | undefined): Promise<string | undefined> {
    if (!token || !TOKEN.test(token)) return undefined;
    return transaction(this.db, (m) => this.repository.deleteSession(m, sha256(token)));
  }

  /** Cookie attributes of `console_session`: Secure when the service is reached over https. */
  cookieOptions() {
    return {
      httpOnly: true,
      sameSite: 'strict' as const,
      secure: this.config.publicUrl?.protocol === 'https:',
      path: '/console',
      maxAge: CONSOLE_SESSION_TTL_S * 1000,
    };
  }

  private csrfToken(sessionToken: string): string {
    return createHash('sha256').update(`console-csrf:${sessionToken}`).digest('base64url');
  }
}
