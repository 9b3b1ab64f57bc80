import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsOptional, IsUUID } from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';
import type { Overage } from '../config/tiers';
import type { LimitSource } from './entitlements.dto';

/** ttl_s's bounds in the query; ENTITLEMENT_TOKEN_MAX_TTL_S narrows the upper one (checked by the service). */
export const MIN_TOKEN_TTL_S = 60;
export const MAX_TOKEN_TTL_S = 315_360_000;

/** One public key of the JWKS: Ed25519 (`OKP`, EdDSA) or P-256 (`EC`, ES256). */
export class PublicJwk {
  @ApiProperty({ enum: ['OKP', 'EC'] }) kty: string;
  @ApiProperty({ enum: ['Ed25519', 'P-256'] }) crv: string;
  @ApiProperty({ description: 'Public key (base64url)' }) x: string;
  @ApiPropertyOptional({ description: 'Public key, second coordinate (EC only)' }) y?: string;
  @ApiProperty({ description: "The key id: a token's header `kid` names it" }) kid: string;
  @ApiProperty({ enum: ['EdDSA', 'ES256'] }) alg: string;
  @ApiProperty({ enum: ['sig'] }) use: string;
}

export class JsonWebKeySet {
  @ApiProperty({ type: [PublicJwk], description: 'The signing key first, then the keys being rotated out' })
  keys: PublicJwk[];
}

export class EntitlementTokenQuery {
  @ApiProperty({ format: 'uuid', description: 'The organisation whose entitlements the token carries' })
  @IsUUID()
  organisation_id: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: MIN_TOKEN_TTL_S,
    maximum: MAX_TOKEN_TTL_S,
    default: 3600,
    description: 'Lifetime in seconds; at most ENTITLEMENT_TOKEN_MAX_TTL_S (default 2678400, 31 days): more is 400',
  })
  @IsOptional()
  @QueryInt({ min: MIN_TOKEN_TTL_S, max: MAX_TOKEN_TTL_S })
  ttl_s?: number;
}

/** A limit as a token carries it: no `used`, no `at_capacity` (a token never carries usage). */
export class TokenLimit {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The limit in force' }) limit: number;
  @ApiProperty({ enum: ['block', 'bill', 'credits'] }) overage: Overage;
  @ApiProperty({ enum: ['tier', 'seats', 'override'] }) source: LimitSource;
}

/** The entitlements a token carries (its payload besides iss, sub, iat, exp). */
export class EntitlementClaims {
  @ApiProperty({ format: 'uuid' }) organisation_id: string;
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty() is_expired: boolean;
  @ApiProperty({ type: 'integer', description: 'The notification version when it was signed: a license.updated with a higher one makes it stale' })
  version: number;
  @ApiProperty({ type: 'integer', nullable: true }) seats: number | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'boolean' }, description: 'Every feature, true where in force' })
  features: Record<string, boolean>;
  @ApiProperty({ type: 'object', additionalProperties: { $ref: getSchemaPath(TokenLimit) }, description: 'Every metric' })
  limits: Record<string, TokenLimit>;
}

/**
 * A token as JSON Schema describes a JWT (2020-12 validation, 8.6): a string of media type application/jwt whose
 * content is [header, claims]. The claims are EntitlementClaims and the registered ones, which is how the document
 * says what the token carries (the route answers the token, never the claims themselves).
 */
const ENTITLEMENT_JWT = {
  contentMediaType: 'application/jwt',
  contentSchema: {
    type: 'array',
    minItems: 2,
    prefixItems: [
      {
        type: 'object',
        properties: { alg: { enum: ['EdDSA', 'ES256'] }, kid: { type: 'string' }, typ: { const: 'JWT' } },
        required: ['alg', 'kid', 'typ'],
      },
      {
        allOf: [
          { $ref: getSchemaPath(EntitlementClaims) },
          {
            type: 'object',
            properties: {
              iss: { type: 'string', description: "PUBLIC_URL's origin" },
              sub: { type: 'string', format: 'uuid', description: 'The organisation id' },
              iat: { type: 'integer' },
              exp: { type: 'integer' },
            },
            required: ['iss', 'sub', 'iat', 'exp'],
          },
        ],
      },
    ],
  },
};

export class EntitlementToken {
  @ApiProperty({
    description:
      'A compact JWS (header alg EdDSA or ES256, kid, typ JWT) whose payload is EntitlementClaims plus iss (PUBLIC_URL), sub ' +
      '(the organisation id), iat and exp; verify it against /.well-known/jwks.json (the client\'s verifyEntitlements)',
    ...ENTITLEMENT_JWT,
  })
  token: string;
  @ApiProperty({ type: 'string', format: 'date-time', description: 'Its exp, as a time' }) expires_at: string;
}
