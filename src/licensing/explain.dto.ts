import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { TIER_SOURCES, TierSource } from '../subscriptions/tier-resolution';
import { LEDGER_STATUSES, LedgerStatus } from '../provider/provider-event';
import { OverrideRecord } from './entitlements.dto';
import { EXPLAIN_EVENTS } from './explain.repository';

// GET /api/licensing/explain (spec §12): the chain that decides an organisation's license, one step per
// link, each kind its own schema (`kind` tells them apart).

export const NOT_CHOSEN_REASONS = ['deleted', 'no_tier', 'no_status', 'incomplete', 'not_live', 'lower_tier', 'older', 'tie'] as const;

/** An override in force: it replaces the tier's value of a feature or limit, whatever the subscription says. */
export class ExplainOverrideStep extends OverrideRecord {
  @ApiProperty({ enum: ['override'] }) kind: 'override';
}

export class ExplainSubscriptionStep {
  @ApiProperty({ enum: ['subscription'] }) kind: 'subscription';
  @ApiProperty({ description: "The provider's subscription id", example: 'sub_1PgafmB7WZ01zgkW' }) id: string;
  @ApiProperty({ description: "The provider's status", example: 'active' }) status: string;
  @ApiProperty({ description: 'The tier it grants' }) tier: string;
  @ApiProperty({
    enum: [...TIER_SOURCES, null],
    type: 'string',
    nullable: true,
    description:
      'How the tier was resolved from the subscription (spec §5): a price listed in PAYPROVIDER_PRICE_<TIER>, the price\'s ' +
      'metadata.tier, its lookup_key, or the subscription\'s metadata.tier; null when it was stored before the source was recorded',
  })
  tier_source: TierSource | null;
}

export class ExplainEventStep {
  @ApiProperty({ enum: ['event'] }) kind: 'event';
  @ApiProperty({ description: "The provider's event id, as in the ledger (events:list, events:replay)", example: 'evt_1PgafmB7WZ01zgkW' })
  id: string;
  @ApiProperty({ example: 'customer.subscription.updated' }) type: string;
  @ApiProperty({ type: 'integer', description: "The event's `created` (Unix seconds)" }) created: number;
  @ApiProperty({ enum: LEDGER_STATUSES, description: 'What the service did with it' }) outcome: LedgerStatus;
  @ApiProperty({ type: 'string', nullable: true, description: 'Why, when it was not simply applied' }) reason: string | null;
}

export class ExplainGraceStep {
  @ApiProperty({ enum: ['grace'] }) kind: 'grace';
  @ApiProperty({ description: 'The past_due subscription' }) subscription_id: string;
  @ApiProperty({ type: 'integer', nullable: true, description: 'When it became past_due (Unix seconds)' }) past_due_since: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'When the grace period (GRACE_PERIOD_DAYS) ends (Unix seconds)' })
  ends_at: number | null;
  @ApiProperty({ description: 'Now is within it: the paid tier still applies' }) in_grace: boolean;
}

export class ExplainNoSubscriptionStep {
  @ApiProperty({ enum: ['no_subscription'] }) kind: 'no_subscription';
  @ApiProperty({ description: 'Why the free tier applies' }) reason: string;
}

export class ExplainNotChosenStep {
  @ApiProperty({ enum: ['not_chosen'] }) kind: 'not_chosen';
  @ApiProperty() id: string;
  @ApiProperty({ type: 'string', nullable: true }) status: string | null;
  @ApiProperty({ type: 'string', nullable: true }) tier: string | null;
  @ApiProperty({
    enum: NOT_CHOSEN_REASONS,
    description:
      'deleted: a customer.subscription.deleted was applied; no_tier: no event resolved a tier of ours; no_status: no status ' +
      'known; incomplete: its first payment is pending; not_live: the chosen one is live and this one is not; lower_tier: ' +
      'both as live, this one of a lower tier; older: same tier, its last event is older; tie: equal on every rule',
  })
  reason: (typeof NOT_CHOSEN_REASONS)[number];
}

export const EXPLAIN_STEPS = [ExplainOverrideStep, ExplainSubscriptionStep, ExplainEventStep, ExplainGraceStep, ExplainNoSubscriptionStep, ExplainNotChosenStep];

export type ExplainStep = ExplainOverrideStep | ExplainSubscriptionStep | ExplainEventStep | ExplainGraceStep | ExplainNoSubscriptionStep | ExplainNotChosenStep;

/** A credit grant that counts (spec §16.1, §16.2), as explain lists it: what usage past the included amount draws on. */
export class ExplainGrant {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ type: 'integer', minimum: 1 }) amount: number;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'What is left to draw on' }) remaining: number;
  @ApiProperty({ enum: ['promotional', 'paid'] }) category: 'promotional' | 'paid';
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100, description: 'Lower is drawn on first' }) priority: number;
  @ApiProperty({ enum: ['admin', 'top_up', 'auto_recharge', 'rollover'] }) source: 'admin' | 'top_up' | 'auto_recharge' | 'rollover';
  @ApiProperty({ type: 'string', format: 'date-time' }) effective_at: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'null: never' }) expires_at: string | null;
  @ApiProperty({ type: 'string', nullable: true }) note: string | null;
}

export class ExplainPlanVersion {
  @ApiProperty({ type: 'integer', minimum: 1, example: 1 }) version: number;
  @ApiProperty({ format: 'date-time', description: 'When the service recorded it (the start that first saw the tier table define the tier so)' })
  recorded_at: string;
}

export class ExplainResponse {
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty() is_expired: boolean;
  @ApiProperty({
    type: () => ExplainPlanVersion,
    nullable: true,
    description:
      "The plan version of the tier the license comes from (spec §17): the chosen subscription's (kept until it is migrated), or the free tier's newest; null when the tier has no version recorded",
  })
  plan_version: ExplainPlanVersion | null;
  @ApiProperty({
    type: 'array',
    items: {
      oneOf: EXPLAIN_STEPS.map((step) => ({ $ref: getSchemaPath(step) })),
      discriminator: {
        propertyName: 'kind',
        mapping: {
          override: getSchemaPath(ExplainOverrideStep),
          subscription: getSchemaPath(ExplainSubscriptionStep),
          event: getSchemaPath(ExplainEventStep),
          grace: getSchemaPath(ExplainGraceStep),
          no_subscription: getSchemaPath(ExplainNoSubscriptionStep),
          not_chosen: getSchemaPath(ExplainNotChosenStep),
        },
      },
    },
    description:
      'What decides the license, newest first: the overrides in force (newest first), the grace period (when the chosen subscription is past_due), the subscription ' +
      `chosen and how its tier was resolved, its newest ${EXPLAIN_EVENTS} events in the ledger (newest first), then every other subscription ` +
      'with the reason it was not chosen (or no_subscription when none shapes the license)',
  })
  because: ExplainStep[];
  @ApiProperty({
    type: [ExplainGrant],
    description:
      "The credit grants that count now (effective, not expired, not voided, something left) for each metric whose policy in force is credits, by metric, in the order they are drawn on",
  })
  grants: ExplainGrant[];
}
