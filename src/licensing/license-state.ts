import { licenseArguments, TierTable } from '../config/tiers';
import { DatabaseFunction, RowOf, tableFunction } from '../database/database-function';

/*
 * The license, in one place: the database function `licensing.license_state(org, tiers, grace_s)`, which every
 * reader calls by name: the status, entitlements and explain reads, checks, the usage write, member additions,
 * GET /api/me, notifications' license comparison, signed tokens and meters. It is inlined into each calling
 * statement, so a read stays one round trip. `tiers` and `grace_s` are `licenseArguments(config)`
 * (src/config/tiers.ts). The current text of each function is in the newest migration that creates or replaces
 * it (1764002213000-LicensesInOnePass.ts for the choice, 1764002410000-Grandfathering.ts for the license and the plan).
 *
 * What it decides (spec §5, §11, §12): the license follows the organisation's best subscription
 * (`licensing.subscription_choices`): the highest tier (table order) among those live now (active, trialing, or
 * past_due within the grace period of when it became past_due: subscriptions.of_every_organisation), then the
 * newest last event; when none is live, the same order among the others, and the license then shows as not
 * active and, when its paid period ended without renewal, expired (`licensing.license_from`). No subscription: free, active, not expired. While a paid
 * license is not active, its plan is the free tier's (`licensing.plan_in_force`). A tier's definition is read in
 * one place, `licensing.tier_plan`, and a plan version's through it (`licensing.tier_plan_at`): the license of a
 * subscription comes from the plan version it is on (`subscriptions.plan_version`, spec §17), the free tier's
 * from the table (its newest version). A per-seat
 * tier's `users` limit is the subscription's seats, at most the tier's `max`; the organisation's live
 * overrides replace the plan's values whatever the tier and license state.
 *
 * The choice is written once, as a set over every organisation (a window partitioned by organisation); one
 * organisation's license filters it by the organisation, which PostgreSQL pushes inside the window down to the
 * subscriptions' index. So a read over many organisations (the console's overview) takes
 * `licensing.subscribed_licenses` in one pass instead of `license_state` once per organisation, from the same text.
 */

/**
 * `licenseArguments(config)` as SQL constants (the tier table a `jsonb` literal), for the hot statements, which are
 * written once per process: PostgreSQL then reads the tier table when it plans a statement (once per connection)
 * and folds what depends on it alone, instead of parsing it at every call (as a parameter: ~10 % of a one-event
 * usage statement's time, ~12 % of the database CPU of a status read; docs/performance.md).
 */
export function licenseConstants(config: { tiers: TierTable; gracePeriodDays: number }): { tiers: string; graceS: number } {
  const { tiers, graceS } = licenseArguments(config);
  // An escape string: the same whatever standard_conforming_strings says.
  return { tiers: `E'${tiers.replace(/\\/g, '\\\\').replace(/'/g, "''")}'::jsonb`, graceS: Number(graceS) };
}

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
  /** The plan version of its tier the license comes from (spec §17; free: its newest), and when it was recorded. */
  plan_version: 'integer',
  plan_version_at: 'timestamp with time zone',
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

/** The same for every organisation at once, with its organisation (SUBSCRIPTION_CHOICE is it filtered). */
export const SUBSCRIPTION_CHOICES = tableFunction('licensing.subscription_choices', 'tiers jsonb, grace_s bigint', {
  organisation_id: 'uuid',
  ...SUBSCRIPTION_CHOICE.columns,
} as const);

/**
 * The license of every organisation whose license follows one of its subscriptions, in one pass; every other
 * organisation's is free, active and not expired.
 */
export const SUBSCRIBED_LICENSES = tableFunction('licensing.subscribed_licenses', 'tiers jsonb, grace_s bigint', {
  organisation_id: 'uuid',
  tier: 'text',
  is_active: 'boolean',
  is_expired: 'boolean',
} as const);

/** Why a subscription other than the chosen one was not chosen. */
export type NotChosen = 'deleted' | 'no_tier' | 'no_status' | 'incomplete' | 'not_live' | 'lower_tier' | 'older' | 'tie';

/** The database functions licensing owns; the test holds them against the database. */
export const LICENSING_FUNCTIONS: DatabaseFunction[] = [
  LICENSE_STATE,
  SUBSCRIPTION_CHOICE,
  SUBSCRIPTION_CHOICES,
  SUBSCRIBED_LICENSES,
  tableFunction('licensing.license_from', 'tier text, status text, in_grace boolean', { tier: 'text', is_active: 'boolean', is_expired: 'boolean' }),
  tableFunction('licensing.tier_plan', 'tiers jsonb, tier_name text', {
    rank: 'integer',
    per_seat: 'boolean',
    limits: 'jsonb',
    overage: 'jsonb',
    features: 'jsonb',
    rollover: 'jsonb',
  }),
  tableFunction('licensing.tier_plan_at', 'tiers jsonb, tier_name text, definition jsonb', {
    rank: 'integer',
    per_seat: 'boolean',
    limits: 'jsonb',
    overage: 'jsonb',
    features: 'jsonb',
    rollover: 'jsonb',
  }),
  tableFunction('licensing.plan_in_force', 'tiers jsonb, tier_name text, active boolean, definition jsonb', {
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
  /** Each metric's count in the current period (1764002310000-CreditReads.ts): the entitlements read, credits' read. */
  tableFunction('licensing.period_usage', 'org uuid, tiers jsonb, ai_period bigint', { metric: 'text', used: 'bigint' }),
  /** The usage write's guard (1764002550000-UsageWriteAllOrNothing.ts): true, or fails the statement (40001) to run it again. */
  { name: 'licensing.usage_uncontended', arguments: 'contended boolean', returns: 'boolean', inlined: false },
];
