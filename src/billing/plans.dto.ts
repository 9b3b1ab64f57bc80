import { ApiProperty } from '@nestjs/swagger';
import { PackPrice, PlanPrice } from '../provider/price-catalog';
import { CurrencyCode } from './currency';

export class PlansQuery {
  @CurrencyCode("Every price's amount in this currency, from the provider's currency options of the price (400 currency_unavailable when a price has none); default: each price's own currency.")
  currency?: string;
}

export class PlanPriceDto implements PlanPrice {
  @ApiProperty({ example: 'price_1PgafmB7WZ01zgkW6dKueIc5', description: 'The provider price id' }) id: string;
  @ApiProperty({ enum: ['day', 'week', 'month', 'year'], example: 'month', description: "The price's recurring interval, as the provider says it" })
  interval: string;
  @ApiProperty({ example: 1 }) interval_count: number;
  @ApiProperty({ example: 2900, description: 'Integer minor units; per seat for a per-seat tier' }) unit_amount: number;
  @ApiProperty({ example: 'EUR', description: 'ISO currency code, upper case' }) currency: string;
}

/** The integer limit of each metric: the three, then the further metrics of the tier table. */
export type PlanLimits = Record<'projects' | 'ai_tokens' | 'users', number> & Record<string, number>;

export class Plan {
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty({ description: 'Sold per seat: unit_amount is per seat, limits.users the most seats' }) per_seat: boolean;
  @ApiProperty({ example: 0, description: 'Days of trial a checkout of this tier starts with' }) trial_days: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'boolean' },
    example: { api_access: true, audit_log: false, sso: false },
    description: "Every feature of the tier table, true where this tier has it",
  })
  features: Record<string, boolean>;
  @ApiProperty({
    type: 'object',
    required: ['projects', 'ai_tokens', 'users'],
    selfRequired: true,
    properties: {
      projects: { type: 'integer', example: 25 },
      ai_tokens: { type: 'integer', example: 2000000, description: 'Per billing period' },
      users: { type: 'integer', example: 10, description: "A per-seat tier's most seats (its max)" },
    },
    additionalProperties: { type: 'integer' },
    description: 'The integer limit of each metric: the three, then the further metrics of the tier table',
  })
  limits: PlanLimits;
  @ApiProperty({ type: [PlanPriceDto], description: 'The prices the provider confirmed; none for free' }) prices: PlanPriceDto[];
}

export class PackPriceDto implements PackPrice {
  @ApiProperty({ example: 'price_1PgbB2B7WZ01zgkWq6mFa0bz', description: 'The provider price id (one-time)' }) id: string;
  // Typed as nullable rather than as the null type alone, which the client's response types drop.
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Always null: a one-time price has no interval' }) interval: null;
  @ApiProperty({ type: Number, nullable: true, example: null, description: 'Always null' }) interval_count: null;
  @ApiProperty({ example: 1000, description: 'Integer minor units, per pack' }) unit_amount: number;
  @ApiProperty({ example: 'EUR', description: 'ISO currency code, upper case' }) currency: string;
}

export class CreditPackPlan {
  @ApiProperty({ example: 'tokens_1m', description: 'The name POST /api/billing/credits/checkout takes' }) pack: string;
  @ApiProperty({ example: 'ai_tokens', description: 'The metric whose credits it sells' }) metric: string;
  @ApiProperty({ type: 'integer', example: 1000000, description: 'Credits per pack' }) amount: number;
  @ApiProperty({ type: 'integer', nullable: true, example: 365, description: 'The credits expire this many days after the purchase; null: never' })
  expires_after_days: number | null;
  @ApiProperty({ type: [PackPriceDto], description: 'The one-time prices the provider confirmed (the first is sold)' }) prices: PackPriceDto[];
}

export class PlanList {
  @ApiProperty({ type: [Plan], description: 'In the tier table\'s order, free first' }) data: Plan[];
  @ApiProperty({ type: [CreditPackPlan], description: "The tier table's credit packs, in its order (none unless TIERS_FILE sells some)" })
  credit_packs: CreditPackPlan[];
}
