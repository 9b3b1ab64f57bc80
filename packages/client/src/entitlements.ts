import { createLocalJWKSet, createRemoteJWKSet, errors, JSONWebKeySet, jwtVerify } from 'jose';
import type { components } from './schema.js';

export type Schemas = components['schemas'];
/** A feature of the tier table (the one the client was generated with: `TIERS_FILE=… npm run client:generate`). */
export type Feature = keyof Schemas['EntitlementsResponse']['features'];
/** A metric of the tier table: the three, then its further metrics. */
export type Metric = keyof Schemas['EntitlementsResponse']['limits'];
/** What an override names: a feature or a metric. */
export type Entitlement = Feature | Metric;

/** What a verified entitlement token says: the entitlements (no usage) and its registered claims. */
export type VerifiedEntitlements = Schemas['EntitlementClaims'] & { iss: string; sub: string; iat: number; exp: number };

export interface VerifyEntitlementsOptions {
  /** The `iss` the token must carry: the service's PUBLIC_URL. Unset: not checked. */
  issuer?: string | undefined;
  /** Verify as of this time instead of now (e.g. a test; a license file checked against a trusted clock). */
  currentDate?: Date | undefined;
}

// One remote key set per URL: jose caches the keys and fetches again when a token names an unknown kid.
const remoteSets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

/**
 * Verifies an entitlement token (`entitlementToken`) offline and answers its entitlements, typed; throws (jose's
 * errors: `JWTExpired`, `JWSSignatureVerificationFailed`, `JWKSNoMatchingKey`…) when it is expired, altered or
 * signed by a key not in `jwks`. `jwks` is the key set itself (`{keys: […]}`, e.g. shipped with a self-hosted
 * install beside its license file) or the URL of `/.well-known/jwks.json` (fetched, cached, refetched for a new
 * key). Only EdDSA and ES256 are accepted.
 */
export async function verifyEntitlements(
  token: string,
  jwks: Schemas['JsonWebKeySet'] | JSONWebKeySet | URL | string,
  options: VerifyEntitlementsOptions = {},
): Promise<VerifiedEntitlements> {
  let keys;
  if (typeof jwks === 'string' || jwks instanceof URL) {
    const url = new URL(jwks);
    keys = remoteSets.get(url.href) ?? createRemoteJWKSet(url);
    remoteSets.set(url.href, keys);
  } else {
    keys = createLocalJWKSet(jwks);
  }
  const { issuer, currentDate } = options;
  const { payload } = await jwtVerify(token, keys, {
    algorithms: ['EdDSA', 'ES256'],
    ...(issuer === undefined ? {} : { issuer }),
    ...(currentDate === undefined ? {} : { currentDate }),
  });
  for (const claim of ['organisation_id', 'tier', 'features', 'limits', 'sub', 'exp'] as const) {
    if (payload[claim] === undefined) throw new errors.JWTInvalid(`not an entitlement token: no ${claim}`);
  }
  return payload as unknown as VerifiedEntitlements;
}
