import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import type { Overage } from '../config/tiers';

/** Where a limit in force comes from (spec §12): the tier, the subscription's seats, or an override. */
export type LimitSource = 'tier' | 'seats' | 'override';

export class LimitEntitlement {
  @ApiProperty({ type: 'integer', example: 12, description: 'The count in the current period (users: the memberships)' }) used: number;
  @ApiProperty({ type: 'integer', example: 25, description: 'The limit in force' }) limit: number;
  @ApiProperty({ description: 'used >= limit' }) at_capacity: boolean;
  @ApiProperty({ enum: ['block', 'bill', 'credits'], description: 'What a report past the limit does: refused (block), accepted and billed (bill), or drawn from credit grants (credits)' })
  overage: Overage;
  @ApiProperty({ enum: ['tier', 'seats', 'override'], description: "The limit's origin: the tier, the subscription's seats, or an override (which wins)" })
  source: LimitSource;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'A credits metric only: the remaining of its credit grants that count' })
  balance?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'A credits metric only: what live reservations hold' })
  reserved?: number;
  @ApiPropertyOptional({
    type: 'integer',
    description: 'A credits metric only: what is left of the included amount (limit − used, at least 0) + balance − reserved',
  })
  available?: number;
}

export class OverrideRecord {
  @ApiProperty({ example: 'sso', description: 'A feature or a metric of the tier table' }) name: string;
  @ApiProperty({
    oneOf: [{ type: 'boolean' }, { type: 'integer', minimum: 0 }],
    example: true,
    description: "A feature's value (boolean) or a metric's limit (integer ≥ 0)",
  })
  value: boolean | number;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When it stops applying; null: until deleted' })
  expires_at: string | null;
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: 500,
    example: 'Pilot, until the contract is signed',
    description: "Free text that may name a customer's contact: given to owners, admins and service keys, left out for other members",
  })
  note?: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', description: 'When this value was set' }) created_at: string;
}

/** The three metrics, then the further metrics of the tier table, each a LimitEntitlement. */
export type Limits = Record<'projects' | 'ai_tokens' | 'users', LimitEntitlement> & Record<string, LimitEntitlement>;

export class EntitlementsResponse {
  @ApiProperty({ format: 'uuid' }) organisation_id: string;
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty() is_expired: boolean;
  @ApiProperty({
    type: 'integer',
    example: 3,
    description: "The organisation's notification version (license.updated carries the same): a cached copy older than a notification's is stale",
  })
  version: number;
  @ApiProperty({ type: 'integer', nullable: true, example: null, description: "The subscription's seats; null for a tier not sold per seat" })
  seats: number | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 1,
    description: "The plan version of the tier the license comes from (spec §17): the subscription's, kept until it is migrated; the free tier's newest",
  })
  plan_version: number | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'boolean' },
    example: { api_access: true, audit_log: false, sso: false },
    description: "Every feature of the tier table, true where it is in force (the free tier's while a paid license is not active; overrides win)",
  })
  features: Record<string, boolean>;
  @ApiProperty({
    type: 'object',
    required: ['projects', 'ai_tokens', 'users'],
    selfRequired: true,
    properties: {
      projects: { allOf: [{ $ref: getSchemaPath(LimitEntitlement) }], description: "Counted from the web app's reports" },
      ai_tokens: { allOf: [{ $ref: getSchemaPath(LimitEntitlement) }], description: 'Within the current billing period' },
      users: { allOf: [{ $ref: getSchemaPath(LimitEntitlement) }], description: "The organisation's memberships" },
    },
    additionalProperties: { $ref: getSchemaPath(LimitEntitlement) },
    description: 'Every metric: the three, then the further metrics of the tier table',
  })
  limits: Limits;
  @ApiProperty({ type: [OverrideRecord], description: 'The live overrides (not expired), by name' }) overrides: OverrideRecord[];
}
