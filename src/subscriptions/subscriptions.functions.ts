import { DatabaseFunction, RowOf, tableFunction } from '../database/database-function';

/**
 * Every subscription of an organisation, deleted ones too, as the license and its explanation read them
 * (migration 1764002000000-ModuleFunctions.ts; since 1764002213000-LicensesInOnePass.ts, OF_EVERY_ORGANISATION
 * filtered by the organisation, which PostgreSQL pushes down to the subscriptions' index): why it cannot shape a license (`not_candidate`: deleted, no_tier,
 * no_status or incomplete; null when it can) and its grace (spec §5): while past_due, from `grace_since` (when it
 * became past_due: pastDueSince in subscriptions.service.ts) until `grace_ends_at`, GRACE_PERIOD_DAYS later. The
 * one place the grace period is computed, and the only reader of past_due_since besides this module's own code.
 */
export const OF_ORGANISATION = tableFunction('subscriptions.of_organisation', 'org uuid, grace_s bigint', {
  subscription_id: 'text',
  tier: 'text',
  tier_source: 'text',
  status: 'text',
  period_start: 'bigint',
  period_end: 'bigint',
  seats: 'integer',
  last_event_created: 'bigint',
  not_candidate: 'text',
  grace_since: 'bigint',
  grace_ends_at: 'bigint',
  in_grace: 'boolean',
  /** Active, trialing, or within grace. */
  live: 'boolean',
} as const);

export type OrganisationSubscription = RowOf<typeof OF_ORGANISATION.columns>;

/** The same for every organisation at once (what the license over every organisation reads), with its organisation. */
export const OF_EVERY_ORGANISATION = tableFunction('subscriptions.of_every_organisation', 'grace_s bigint', {
  organisation_id: 'uuid',
  ...OF_ORGANISATION.columns,
} as const);

/**
 * The plan version (spec §17) a subscription of the tier is on, with its definition and when it was recorded; no
 * subscription (the free tier), or one on no version: the tier's newest (1764002410000-Grandfathering.ts). A
 * subscription's version is set by a trigger when it is stored first and when its tier changes.
 */
export const PLAN_VERSION = tableFunction('subscriptions.plan_version', 'sub text, tier_name text', {
  version: 'integer',
  definition: 'jsonb',
  created_at: 'timestamp with time zone',
} as const);

/** Every plan version recorded (1764002411000-PlanReads.ts). */
export const PLAN_VERSIONS = tableFunction('subscriptions.plan_versions', '', {
  tier: 'text',
  version: 'integer',
  definition: 'jsonb',
  created_at: 'timestamp with time zone',
} as const);

/**
 * Every live subscription (active, trialing or within grace, and able to shape a license) with the plan version
 * it is on: what the plans list counts and a migration preview compares.
 */
export const LIVE_ON_VERSIONS = tableFunction('subscriptions.live_on_versions', 'grace_s bigint', {
  organisation_id: 'uuid',
  subscription_id: 'text',
  tier: 'text',
  plan_version: 'integer',
  period_start: 'bigint',
  seats: 'integer',
  billing_interval: 'text',
} as const);

/** The database functions subscriptions owns; the test holds them against the database. */
export const SUBSCRIPTIONS_FUNCTIONS: DatabaseFunction[] = [OF_ORGANISATION, OF_EVERY_ORGANISATION, PLAN_VERSION, PLAN_VERSIONS, LIVE_ON_VERSIONS];
