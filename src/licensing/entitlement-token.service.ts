import { Injectable } from '@nestjs/common';
import { SignJWT } from 'jose';
import { AppException } from '../common/app-exception';
import type { QueryCaller } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import { EntitlementClaims, EntitlementToken } from './entitlement-token.dto';
import { Entitlements, EntitlementsService } from './entitlements.service';
import { EntitlementSigningKeys } from './signing-keys';

/** A token's lifetime when `ttl_s` is not given. */
export const DEFAULT_TOKEN_TTL_S = 3600;

/**
 * Signed entitlements (spec §12): the entitlements read, without usage, as a compact JWS a web app or a
 * self-hosted install verifies offline against /.well-known/jwks.json.
 */
@Injectable()
export class EntitlementTokenService {
  constructor(
    private readonly entitlements: EntitlementsService,
    private readonly keys: EntitlementSigningKeys,
    private readonly config: AppConfig,
  ) {}

  async issue(organisationId: string, caller: QueryCaller, ttlS = DEFAULT_TOKEN_TTL_S): Promise<EntitlementToken> {
    if (ttlS > this.config.entitlementTokenMaxTtlS) {
      throw new AppException('validation_failed', `ttl_s must not be greater than ${this.config.entitlementTokenMaxTtlS} (ENTITLEMENT_TOKEN_MAX_TTL_S)`);
    }
    // The caller is checked (401/403/404) before the key: a refused caller learns nothing of the configuration.
    const read = await this.entitlements.readForCaller(organisationId, caller);
    const key = this.keys.signer();
    const iat = Math.floor(Date.now() / 1000);
    const exp = iat + ttlS;
    const token = await new SignJWT({ ...claimsOf(read) })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.issuer())
      .setSubject(organisationId)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(key.privateKey);
    return { token, expires_at: new Date(exp * 1000).toISOString() };
  }

  /** PUBLIC_URL's origin, as the sandbox's links use it; unset: http://localhost:<PORT>. */
  private issuer(): string {
    return this.config.publicUrl?.origin ?? `http://localhost:${this.config.port}`;
  }
}

/**
 * What a token says: the read's license, features and limits in force, but nothing that changes with usage
 * (`used`, `at_capacity`) and no override (its note is free text: it could hold a name or an email).
 */
function claimsOf(read: Entitlements): EntitlementClaims {
  return {
    organisation_id: read.organisation_id,
    tier: read.tier,
    is_active: read.is_active,
    is_expired: read.is_expired,
    version: read.version,
    seats: read.seats,
    features: read.features,
    limits: Object.fromEntries(Object.entries(read.limits).map(([metric, l]) => [metric, { limit: l.limit, overage: l.overage, source: l.source }])),
  };
}
