import { DatabaseFunction, RowOf, tableFunction } from '../database/database-function';

/*
 * The license, in one place: the database function `licensing.license_state(org, tiers, grace_s)` (created by
 * migration 1764002000000-ModuleFunctions.ts; a later change is a new migration with CREATE OR REPLACE), which
 * every reader calls by name: the status, entitlements and explain reads, checks, the usage write, member
 * additions, GET /api/me, notifications' license comparison, signed tokens, meters and the console. It is
 * inlined into each calling statement, so a read stays one round trip. `tiers` and `grace_s` are
 * `licenseArguments(config)` (src/config/tiers.ts).
 *
 * What it decides (spec §5, §11, §12): the license follows the organisation's best subscription
 * (`licensing.subscription_choice`): the highest tier (table order) among those live now (active, trialing, or
 * past_due within the grace period of when it became past_due: subscriptions.of_organisation); when none is
 * live, the one whose last event is newest, which then shows as not active and, when its paid period ended
 * without renewal, expired. No subscription: free, active, not expired. While a paid license is not active,
 * its plan is the free tier's (`licensing.plan_in_force`). A tier's definition is read in one place,
 * `licensing.tier_plan` (with plan versions, the one function to point at them). A per-seat
 * tier's `users` limit is the subscription's seats, at most the tier's `max`; the organisation's live
 * overrides replace the plan's values whatever the tier and license state.
 */

/** The license of an organisation: one row, also for one without subscriptions or one that does not exist. */
export const LICENSE_STATE = tableFunction('licensing.license_state', 'org uuid, tiers jsonb, grace_s bigint', {
  tier: 'text',
  /** The subscription it follows (null: none). */
  subscription_id: 'text',
  is_active: 'boolean',
  is_expired: 'boolean',
  /** False when the tier table no longer lists the tier (free limits then apply). */
  tier_known: 'boolean',
  /** Metric → the limit in force. */
  limits: 'jsonb',
  /** Feature → in force. */
  features: 'jsonb',
  /** Metric → `block` or `bill`, of the plan in force. */
  overage: 'jsonb',
  /** Metric → `seats` or `override`, for limits not the plan's. */
  sources: 'jsonb',
  /** The subscription's seats when its tier is sold per seat, else null. */
  seats: 'integer',
  /** The start of the ai_tokens billing period (Unix seconds). */
  ai_period: 'bigint',
} as const);

export type LicenseState = RowOf<typeof LICENSE_STATE.columns>;

/** Every subscription of the organisation with whether the license follows it, and why not (explain). */
export const SUBSCRIPTION_CHOICE = tableFunction('licensing.subscription_choice', 'org uuid, tiers jsonb, grace_s bigint', {
  subscription_id: 'text',
  tier: 'text',
  tier_source: 'text',
  status: 'text',
  period_start: 'bigint',
  seats: 'integer',
  last_event_created: 'bigint',
  grace_since: 'bigint',
  grace_ends_at: 'bigint',
  in_grace: 'boolean',
  chosen: 'boolean',
  /** Why it was not chosen: a reason it cannot shape a license (subscriptions.of_organisation), or the first key it lost on. */
  not_chosen: 'text',
} as const);

/** Why a subscription other than the chosen one was not chosen. */
export type NotChosen = 'deleted' | 'no_tier' | 'no_status' | 'incomplete' | 'not_live' | 'lower_tier' | 'older' | 'tie';

/** The database functions licensing owns; the test holds them against the database. */
export const LICENSING_FUNCTIONS: DatabaseFunction[] = [
  LICENSE_STATE,
  SUBSCRIPTION_CHOICE,
  tableFunction('licensing.tier_plan', 'tiers jsonb, tier_name text', {
    rank: 'integer',
    per_seat: 'boolean',
    limits: 'jsonb',
    overage: 'jsonb',
    features: 'jsonb',
    rollover: 'jsonb',
  }),
  tableFunction('licensing.plan_in_force', 'tiers jsonb, tier_name text, active boolean', {
    tier_known: 'boolean',
    per_seat: 'boolean',
    tier_limits: 'jsonb',
    limits: 'jsonb',
    overage: 'jsonb',
    features: 'jsonb',
    rollover: 'jsonb',
  }),
  tableFunction('licensing.live_overrides', 'org uuid', { name: 'text', value: 'jsonb', expires_at: 'timestamp with time zone', note: 'text', created_at: 'timestamp with time zone' }),
  tableFunction('licensing.expired_overrides', '', { organisation_id: 'uuid', expires_at: 'timestamp with time zone' }),
  { name: 'licensing.counter_period', arguments: 'tiers jsonb, metric text, ai_period bigint', returns: 'bigint', inlined: true },
];
