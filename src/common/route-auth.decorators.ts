import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
  Type,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiSecurity } from '@nestjs/swagger';
import { SECURITY } from './api-docs';

/*
 * Who may call a route: one decorator of this vocabulary on the route (or on its controller, when every
 * route of it is the same) says it. The one global guard (src/identity/auth.guard.ts) reads the declaration
 * and authenticates accordingly; each decorator also documents the credential in OpenAPI. A route with no
 * declaration still needs a session, but test/route-auth.e2e-spec.ts fails on it: every route says it.
 *
 * Metadata and Swagger only: nothing here imports identity, which does the checking.
 */

/** An organisation role (`memberships.role`), named here so that declaring one needs nothing from identity. */
export type OrgRole = 'owner' | 'admin' | 'member';

/** A route's declaration, as the global guard reads it (metadata key ROUTE_AUTH). */
export type RouteAuth =
  | { kind: 'public' }
  | { kind: 'session'; verifiedBy: 'guard'; orgRole?: readonly OrgRole[] }
  | { kind: 'session'; verifiedBy: 'query' }
  | { kind: 'serviceKey' }
  | { kind: 'sessionOrServiceKey'; verifiedBy?: 'query' }
  | { kind: 'metricsToken' }
  | { kind: 'webhookSignature' }
  | { kind: 'consoleSession' };

export const ROUTE_AUTH = 'routeAuth';

const declare = (auth: RouteAuth) => SetMetadata(ROUTE_AUTH, auth);
const sessionSchemes = () => applyDecorators(ApiBearerAuth(SECURITY.session), ApiCookieAuth(SECURITY.sessionCookie));

/** Anyone, with no credential (health; the sandbox's pages, whose unguessable ids are the credential). */
export const Public = () => declare({ kind: 'public' });

export interface SessionOptions {
  /**
   * The roles the route demands in the organisation it acts on; none: any member. That organisation is only
   * known once the request is validated, so the guard hands the roles on with the caller (`@CurrentUser()`)
   * and `IdentityService.requireMember(caller, organisationId)` enforces them: 403 `role_forbidden`.
   */
  orgRole?: readonly OrgRole[];
  verifiedBy?: 'guard';
}

export interface QueryVerifiedSession {
  /**
   * For a session token, the guard only checks that one is present (401 otherwise) and hands its SHA-256
   * to `@QueryVerifiedCaller()`, without looking it up. The route's own statement must match it with
   * `identity.access` (or `identity.live_session`) and answer 401 when no live session matches: authenticating and answering then take one
   * database round trip instead of two (the status read, the web app's hottest call). A JWT (when
   * AUTH_JWT_JWKS_URL is set) cannot be checked in SQL: the guard verifies it and hands on its user's id,
   * for which the route checks membership as it would for a session's user.
   */
  verifiedBy: 'query';
  /** Not with 'query': for a session, only the route's statement learns who the caller is. */
  orgRole?: never;
}

/**
 * A signed-in user: `Authorization: Bearer <token>` or the `session` cookie, looked up by the guard through
 * the passport SessionStrategy; 401 `unauthenticated` when missing, unknown, expired or revoked. With
 * AUTH_JWT_JWKS_URL set, a bearer JWT of the web app is accepted too (the JwtStrategy; its `sub` is the
 * user's `external_id`), with the same 401, and 503 `jwks_unavailable` when its signing key cannot be fetched. The caller
 * is `@CurrentUser()`. See SessionOptions for `orgRole` and QueryVerifiedSession for `verifiedBy: 'query'`.
 */
export function Session(options: SessionOptions | QueryVerifiedSession = {}) {
  const auth: RouteAuth =
    options.verifiedBy === 'query'
      ? { kind: 'session', verifiedBy: 'query' }
      : { kind: 'session', verifiedBy: 'guard', ...(options.orgRole ? { orgRole: [...options.orgRole] } : {}) };
  return applyDecorators(declare(auth), sessionSchemes());
}

/**
 * A trusted back-end: header `X-Service-Key`, one of SERVICE_API_KEYS. 403 `service_keys_not_configured`
 * when none is configured, 401 `service_key_required` / `invalid_service_key`. A session is not enough.
 */
export const ServiceKey = () => applyDecorators(declare({ kind: 'serviceKey' }), ApiSecurity(SECURITY.serviceKey));

/**
 * `X-Service-Key` when the request carries that header (then the key alone decides, even beside a valid
 * session, and there is no `@CurrentUser()`), else a session as for `@Session()`. With `verifiedBy: 'query'`
 * the session is left to the route's statement as for `@Session({ verifiedBy: 'query' })`, and the caller,
 * a service key's name included, is `@QueryVerifiedCaller()`.
 */
export const SessionOrServiceKey = (options: { verifiedBy?: 'query' } = {}) =>
  applyDecorators(declare({ kind: 'sessionOrServiceKey', ...options }), sessionSchemes(), ApiSecurity(SECURITY.serviceKey));

/**
 * A metrics scraper: `Authorization: Bearer <METRICS_TOKEN>` when METRICS_TOKEN is set (else 401
 * `metrics_token_required`); open when it is not set.
 */
export const MetricsToken = () => applyDecorators(declare({ kind: 'metricsToken' }), ApiBearerAuth(SECURITY.metricsToken));

/**
 * A signed webhook. `guard` verifies the signature; it lives with the webhook because it needs the raw body
 * and the signing secrets, and runs right after the global guard, which lets the request through to it.
 * No OpenAPI security scheme (a signature is not something to enter under "Authorize"): document the
 * header with @ApiHeader.
 */
export const WebhookSignature = (guard: Type<CanActivate>) =>
  applyDecorators(declare({ kind: 'webhookSignature' }), UseGuards(guard));

/**
 * An operator of the console (spec §14): the cookie `console_session` alone, checked by `guard` (the console's,
 * which also checks the CSRF token of a POST); without one the answer is the sign-in page. No API credential
 * is accepted here, and no API route accepts a console session. HTML pages: left out of the API document.
 */
export const ConsoleSession = (guard: Type<CanActivate>) => applyDecorators(declare({ kind: 'consoleSession' }), UseGuards(guard));

/**
 * Who calls a `@Session({ verifiedBy: 'query' })` route, as the guard hands it on: the SHA-256 of a session
 * token, still to be verified by the route's statement; or the id of a user the guard has already verified
 * (a JWT), whose membership the route still checks.
 */
export type QueryCaller =
  | { sessionTokenHash: Buffer; userId?: never; serviceKey?: never }
  | { userId: string; sessionTokenHash?: never; serviceKey?: never }
  /** `@SessionOrServiceKey({ verifiedBy: 'query' })` called with a service key: its name. */
  | { serviceKey: string; sessionTokenHash?: never; userId?: never };

/** On a `@Session({ verifiedBy: 'query' })` or `@SessionOrServiceKey({ verifiedBy: 'query' })` route: the QueryCaller. */
export const QueryVerifiedCaller = createParamDecorator((_: unknown, ctx: ExecutionContext): QueryCaller => {
  const caller = ctx.switchToHttp().getRequest<{ queryCaller?: QueryCaller }>().queryCaller;
  if (!caller) throw new Error("@QueryVerifiedCaller() needs verifiedBy: 'query' on the route's @Session() or @SessionOrServiceKey()");
  return caller;
});
