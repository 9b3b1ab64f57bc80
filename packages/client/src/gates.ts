import { errors } from 'jose';
import type { Feature, VerifiedEntitlements, VerifyEntitlementsOptions } from './entitlements.js';
import { verifyEntitlements } from './entitlements.js';

/** The parts of an Express (or Nest on Express) request the gates read and write. */
export interface GatedRequest {
  headers: Record<string, string | string[] | undefined>;
  /** The route's parameters (`/orgs/:orgId/…`), for `organisationId`. */
  params?: Record<string, string>;
  /** What `requireEntitlements` verified, for the handlers after it. */
  entitlements?: VerifiedEntitlements;
}

/** The parts of an Express response the gates answer with. */
export interface GateResponse {
  status(code: number): GateResponse;
  json(body: unknown): unknown;
}

export type GateMiddleware = (req: GatedRequest, res: GateResponse, next: (err?: unknown) => void) => void;

/** The codes a gate answers with, in the service's error shape (`{statusCode, error, message, code}`). */
export type GateErrorCode =
  | 'entitlements_token_missing'
  | 'entitlements_token_invalid'
  | 'entitlements_keys_unavailable'
  | 'entitlements_wrong_organisation'
  | 'feature_not_in_plan';

export interface RequireEntitlementsOptions extends Pick<VerifyEntitlementsOptions, 'issuer'> {
  /**
   * The service's public keys: the URL of its `/.well-known/jwks.json` (fetched once, cached, fetched again for
   * an unknown `kid`) or the key set itself (`await client.jwks()`, a file shipped with a license).
   */
  jwks: Parameters<typeof verifyEntitlements>[1];
  /** Where the request carries its token. Default: the `X-Entitlements-Token` header. */
  token?: ((req: GatedRequest) => string | undefined | Promise<string | undefined>) | undefined;
  /**
   * The organisation the request acts on (from your own session, or the route): a token of another
   * organisation, or a request for which this answers nothing, is then refused with 403. Give it whenever the
   * token comes from the browser, or one customer's token opens another's features.
   */
  organisationId?: ((req: GatedRequest) => string | undefined) | undefined;
}

const REASONS: Record<number, string> = { 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 500: 'Internal Server Error', 503: 'Service Unavailable' };

function refuse(res: GateResponse, statusCode: number, code: GateErrorCode, message: string): void {
  res.status(statusCode).json({ statusCode, error: REASONS[statusCode], message, code });
}

function headerToken(req: GatedRequest): string | undefined {
  const value = req.headers['x-entitlements-token'];
  return (Array.isArray(value) ? value[0] : value) || undefined;
}

/**
 * A token that fails verification is the caller's problem (401); keys that cannot be fetched are a failure of
 * the service's side (503), so a customer is not told their license is bad while the JWKS is unreachable.
 */
function keysUnavailable(err: unknown): boolean {
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return true;
  return !(err instanceof errors.JOSEError);
}

/**
 * Express middleware (Nest too, through `consumer.apply(…)`) for the web app's own back end: verifies the
 * request's signed entitlement token (`GET /api/licensing/entitlements/token`) offline against the service's
 * keys and puts the typed entitlements on `req.entitlements`. 401 without a token or with one that is
 * expired, altered, signed by another key or of another issuer; 403 for another organisation's token (with
 * `organisationId`); 503 when the key set cannot be fetched. Answers in the service's error shape.
 */
export function requireEntitlements(options: RequireEntitlementsOptions): GateMiddleware {
  const { jwks, token = headerToken, organisationId, ...verifyOptions } = options;
  return (req, res, next) => {
    void (async () => {
      const presented = await token(req);
      if (!presented) return refuse(res, 401, 'entitlements_token_missing', 'The request carries no entitlement token.');
      let verified: VerifiedEntitlements;
      try {
        verified = await verifyEntitlements(presented, jwks, verifyOptions);
      } catch (err) {
        if (keysUnavailable(err)) return refuse(res, 503, 'entitlements_keys_unavailable', 'The keys that verify entitlement tokens could not be fetched; try again.');
        return refuse(res, 401, 'entitlements_token_invalid', `The entitlement token is not valid: ${(err as Error).message}.`);
      }
      // Configured but naming nothing (a route without the parameter): closed, like a mismatch.
      if (organisationId && verified.organisation_id !== organisationId(req)) {
        return refuse(res, 403, 'entitlements_wrong_organisation', "The entitlement token is not the organisation's this request acts on.");
      }
      req.entitlements = verified;
      next();
    })().catch(next);
  };
}

/**
 * After `requireEntitlements`: lets the request through when the verified entitlements have the feature,
 * else 402 `feature_not_in_plan` (the organisation's plan does not include it: an upgrade or an override
 * would). Without `requireEntitlements` before it, the request fails (500): a gate never opens by mistake.
 */
export function requireFeature(name: Feature): GateMiddleware {
  return (req, res, next) => {
    if (!req.entitlements) {
      next(new Error(`requireFeature('${name}') needs requireEntitlements(…) before it on this route`));
      return;
    }
    if (req.entitlements.features[name] !== true) {
      refuse(res, 402, 'feature_not_in_plan', `The organisation's plan does not include ${name}.`);
      return;
    }
    next();
  };
}
