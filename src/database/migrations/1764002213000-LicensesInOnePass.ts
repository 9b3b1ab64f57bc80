import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The license over every organisation in one pass, from the same text as one organisation's (the console's
 * overview counted organisations by `licensing.license_state` called once per organisation: ~350 ms at 100,000
 * organisations). Each rule that chooses a license is now written once as a set over all organisations, and the
 * per-organisation functions are that set filtered by the organisation, which PostgreSQL pushes down into it
 * when it inlines them (to the subscriptions' index on organisation_id, within the window's partition), so their
 * plans are those of before:
 *
 * - `subscriptions.of_every_organisation(grace_s)`: every subscription with its organisation, why it cannot shape a
 *   license and its grace; `subscriptions.of_organisation(org, grace_s)` is it filtered.
 * - `licensing.subscription_choices(tiers, grace_s)`: the choice, a window partitioned by organisation;
 *   `licensing.subscription_choice(org, tiers, grace_s)` is it filtered.
 * - `licensing.license_from(tier, status, in_grace)`: the tier, is_active and is_expired a chosen subscription
 *   gives (NULLs, no subscription chosen: free, active, not expired), formerly written inside license_state.
 * - `licensing.subscribed_licenses(tiers, grace_s)`: the license of every organisation whose license follows a
 *   subscription (every other one is free, active, not expired): what the overview counts.
 * - `licensing.license_state(org, tiers, grace_s)`: as before, its choice and flags from the two above.
 *
 * Arguments and columns of the existing functions are unchanged.
 */
export class LicensesInOnePass1764002213000 implements MigrationInterface {
  name = 'LicensesInOnePass1764002213000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // subscriptions: every subscription (deleted ones too) with its organisation, why it cannot shape a license
    // (NULL: it can; first reason in this order) and its grace (spec §5): past_due counts from past_due_since
    // (else the period's end) for grace_s seconds.
    await queryRunner.query(`
      CREATE FUNCTION subscriptions.of_every_organisation(grace_s bigint)
      RETURNS TABLE (organisation_id uuid, subscription_id text, tier text, tier_source text, status text, period_start bigint,
                     period_end bigint, seats integer, last_event_created bigint, not_candidate text, grace_since bigint,
                     grace_ends_at bigint, in_grace boolean, live boolean)
      LANGUAGE sql STABLE AS $$
        SELECT s.organisation_id, s.subscription_id, s.tier, s.tier_source, s.status, s.current_period_start, s.current_period_end,
               s.seats, s.last_event_created,
               CASE WHEN s.deleted_event_created IS NOT NULL THEN 'deleted' WHEN s.tier IS NULL THEN 'no_tier'
                    WHEN s.status IS NULL THEN 'no_status' WHEN s.status = 'incomplete' THEN 'incomplete' END,
               g.since, g.ends_at, g.in_grace, s.status IN ('active', 'trialing') OR g.in_grace
        FROM provider_subscriptions s
        CROSS JOIN LATERAL (
          SELECT e.since, e.ends_at, COALESCE(extract(epoch FROM now())::bigint <= e.ends_at, false) AS in_grace
          FROM (SELECT CASE WHEN s.status = 'past_due' THEN s.past_due_since END AS since,
                       CASE WHEN s.status = 'past_due' THEN COALESCE(s.past_due_since, s.current_period_end) + grace_s END AS ends_at) e
        ) g
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION subscriptions.of_organisation(org uuid, grace_s bigint)
      RETURNS TABLE (subscription_id text, tier text, tier_source text, status text, period_start bigint, period_end bigint,
                     seats integer, last_event_created bigint, not_candidate text, grace_since bigint, grace_ends_at bigint,
                     in_grace boolean, live boolean)
      LANGUAGE sql STABLE AS $$
        SELECT s.subscription_id, s.tier, s.tier_source, s.status, s.period_start, s.period_end, s.seats, s.last_event_created,
               s.not_candidate, s.grace_since, s.grace_ends_at, s.in_grace, s.live
        FROM subscriptions.of_every_organisation(grace_s) s
        WHERE s.organisation_id = org
      $$`);

    // licensing: the subscription each organisation's license follows (spec §5): the first candidate by live
    // (active, trialing, in grace), then tier rank, then newest event; every other one with the first reason it
    // was not chosen. A window partitioned by organisation, so a filter on the organisation goes inside it.
    await queryRunner.query(`
      CREATE FUNCTION licensing.subscription_choices(tiers jsonb, grace_s bigint)
      RETURNS TABLE (organisation_id uuid, subscription_id text, tier text, tier_source text, status text, period_start bigint,
                     seats integer, last_event_created bigint, grace_since bigint, grace_ends_at bigint, in_grace boolean,
                     chosen boolean, not_chosen text)
      LANGUAGE sql STABLE AS $$
        SELECT r.organisation_id, r.subscription_id, r.tier, r.tier_source, r.status, r.period_start, r.seats, r.last_event_created,
               r.grace_since, r.grace_ends_at, r.in_grace, r.not_candidate IS NULL AND r.pos = 1,
               CASE WHEN r.not_candidate IS NOT NULL THEN r.not_candidate
                    WHEN r.pos = 1 THEN NULL
                    WHEN r.live IS DISTINCT FROM r.best_live THEN 'not_live'
                    WHEN r.rank IS DISTINCT FROM r.best_rank THEN 'lower_tier'
                    WHEN r.last_event_created IS DISTINCT FROM r.best_created THEN 'older'
                    ELSE 'tie' END
        FROM (
          SELECT s.*, t.rank, row_number() OVER w AS pos, first_value(s.live) OVER w AS best_live,
                 first_value(t.rank) OVER w AS best_rank, first_value(s.last_event_created) OVER w AS best_created
          FROM subscriptions.of_every_organisation(grace_s) s
          CROSS JOIN LATERAL licensing.tier_plan(tiers, s.tier) t
          WINDOW w AS (PARTITION BY s.organisation_id
                       ORDER BY s.not_candidate IS NOT NULL, s.live DESC NULLS LAST, t.rank DESC NULLS LAST,
                                s.last_event_created DESC NULLS LAST)
        ) r
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION licensing.subscription_choice(org uuid, tiers jsonb, grace_s bigint)
      RETURNS TABLE (subscription_id text, tier text, tier_source text, status text, period_start bigint, seats integer,
                     last_event_created bigint, grace_since bigint, grace_ends_at bigint, in_grace boolean, chosen boolean,
                     not_chosen text)
      LANGUAGE sql STABLE AS $$
        SELECT c.subscription_id, c.tier, c.tier_source, c.status, c.period_start, c.seats, c.last_event_created, c.grace_since,
               c.grace_ends_at, c.in_grace, c.chosen, c.not_chosen
        FROM licensing.subscription_choices(tiers, grace_s) c
        WHERE c.organisation_id = org
      $$`);
    // The tier and flags of the license a chosen subscription gives (spec §5); all NULL, no subscription chosen:
    // free, active, not expired. Active: active, trialing or within grace; expired: ended without renewal, or past
    // due beyond grace.
    await queryRunner.query(`
      CREATE FUNCTION licensing.license_from(tier text, status text, in_grace boolean)
      RETURNS TABLE (tier text, is_active boolean, is_expired boolean)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT COALESCE(tier, 'free'),
               COALESCE(tier IS NULL OR status IN ('active', 'trialing') OR in_grace, false),
               COALESCE(tier IS NOT NULL AND (status IN ('unpaid', 'incomplete_expired', 'paused', 'canceled')
                                              OR (status = 'past_due' AND NOT in_grace)), false)
      $$`);
    // The license of every organisation whose license follows one of its subscriptions, in one pass (every other
    // organisation's is free, active, not expired).
    await queryRunner.query(`
      CREATE FUNCTION licensing.subscribed_licenses(tiers jsonb, grace_s bigint)
      RETURNS TABLE (organisation_id uuid, tier text, is_active boolean, is_expired boolean)
      LANGUAGE sql STABLE AS $$
        SELECT c.organisation_id, f.tier, f.is_active, f.is_expired
        FROM licensing.subscription_choices(tiers, grace_s) c
        CROSS JOIN LATERAL licensing.license_from(c.tier, c.status, c.in_grace) f
        WHERE c.chosen
      $$`);
    // The license (spec §5, §11, §12): one row, also for an organisation without subscriptions (free, active, not
    // expired) or one that does not exist. A per-seat tier's users limit is the subscription's seats, at most the
    // tier's max; the live overrides replace the plan's values whatever the tier. ai_period: the start of the
    // ai_tokens billing period (Unix seconds): the paid period while a paid license is active, else the month (UTC).
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION licensing.license_state(org uuid, tiers jsonb, grace_s bigint)
      RETURNS TABLE (tier text, subscription_id text, is_active boolean, is_expired boolean, tier_known boolean,
                     limits jsonb, features jsonb, overage jsonb, sources jsonb, seats integer, ai_period bigint)
      LANGUAGE sql STABLE AS $$
        SELECT l.tier, l.subscription_id, l.is_active, l.is_expired, p.tier_known,
               p.limits || s.seat_limit || o.limits, p.features || o.features, p.overage,
               CASE WHEN s.seat_limit <> '{}' THEN '{"users": "seats"}'::jsonb ELSE '{}' END || o.sources,
               CASE WHEN p.per_seat THEN l.seats END,
               CASE WHEN l.tier <> 'free' AND l.is_active AND l.period_start IS NOT NULL THEN l.period_start
                    ELSE extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::bigint END
        FROM (
          SELECT f.tier, c.subscription_id, c.period_start, c.seats, f.is_active, f.is_expired
          FROM (SELECT 1) AS one
          LEFT JOIN licensing.subscription_choices(tiers, grace_s) c ON c.organisation_id = org AND c.chosen
          CROSS JOIN LATERAL licensing.license_from(c.tier, c.status, c.in_grace) f
        ) l
        CROSS JOIN LATERAL licensing.plan_in_force(tiers, l.tier, l.is_active) p
        CROSS JOIN LATERAL (
          SELECT CASE WHEN l.is_active AND p.per_seat AND l.seats IS NOT NULL
                      THEN jsonb_build_object('users', LEAST(l.seats, (p.tier_limits ->> 'users')::bigint)) ELSE '{}'::jsonb END AS seat_limit
        ) s
        CROSS JOIN (
          SELECT COALESCE(jsonb_object_agg(v.name, v.value) FILTER (WHERE jsonb_typeof(v.value) = 'number'), '{}') AS limits,
                 COALESCE(jsonb_object_agg(v.name, v.value) FILTER (WHERE jsonb_typeof(v.value) = 'boolean'), '{}') AS features,
                 COALESCE(jsonb_object_agg(v.name, 'override') FILTER (WHERE jsonb_typeof(v.value) = 'number'), '{}') AS sources
          FROM licensing.live_overrides(org) v
        ) o
      $$`);
  }

  /** The three functions as migration 1764002000000-ModuleFunctions created them, and the new ones dropped. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION subscriptions.of_organisation(org uuid, grace_s bigint)
      RETURNS TABLE (subscription_id text, tier text, tier_source text, status text, period_start bigint, period_end bigint,
                     seats integer, last_event_created bigint, not_candidate text, grace_since bigint, grace_ends_at bigint,
                     in_grace boolean, live boolean)
      LANGUAGE sql STABLE AS $$
        SELECT s.subscription_id, s.tier, s.tier_source, s.status, s.current_period_start, s.current_period_end, s.seats,
               s.last_event_created,
               CASE WHEN s.deleted_event_created IS NOT NULL THEN 'deleted' WHEN s.tier IS NULL THEN 'no_tier'
                    WHEN s.status IS NULL THEN 'no_status' WHEN s.status = 'incomplete' THEN 'incomplete' END,
               g.since, g.ends_at, g.in_grace, s.status IN ('active', 'trialing') OR g.in_grace
        FROM provider_subscriptions s
        CROSS JOIN LATERAL (
          SELECT e.since, e.ends_at, COALESCE(extract(epoch FROM now())::bigint <= e.ends_at, false) AS in_grace
          FROM (SELECT CASE WHEN s.status = 'past_due' THEN s.past_due_since END AS since,
                       CASE WHEN s.status = 'past_due' THEN COALESCE(s.past_due_since, s.current_period_end) + grace_s END AS ends_at) e
        ) g
        WHERE s.organisation_id = org
      $$`);
await queryRunner.query(`
      CREATE OR REPLACE FUNCTION licensing.subscription_choice(org uuid, tiers jsonb, grace_s bigint)
      RETURNS TABLE (subscription_id text, tier text, tier_source text, status text, period_start bigint, seats integer,
                     last_event_created bigint, grace_since bigint, grace_ends_at bigint, in_grace boolean, chosen boolean,
                     not_chosen text)
      LANGUAGE sql STABLE AS $$
        SELECT r.subscription_id, r.tier, r.tier_source, r.status, r.period_start, r.seats, r.last_event_created,
               r.grace_since, r.grace_ends_at, r.in_grace, r.not_candidate IS NULL AND r.pos = 1,
               CASE WHEN r.not_candidate IS NOT NULL THEN r.not_candidate
                    WHEN r.pos = 1 THEN NULL
                    WHEN r.live IS DISTINCT FROM r.best_live THEN 'not_live'
                    WHEN r.rank IS DISTINCT FROM r.best_rank THEN 'lower_tier'
                    WHEN r.last_event_created IS DISTINCT FROM r.best_created THEN 'older'
                    ELSE 'tie' END
        FROM (
          SELECT s.*, t.rank, row_number() OVER w AS pos, first_value(s.live) OVER w AS best_live,
                 first_value(t.rank) OVER w AS best_rank, first_value(s.last_event_created) OVER w AS best_created
          FROM subscriptions.of_organisation(org, grace_s) s
          CROSS JOIN LATERAL licensing.tier_plan(tiers, s.tier) t
          WINDOW w AS (ORDER BY s.not_candidate IS NOT NULL, s.live DESC NULLS LAST, t.rank DESC NULLS LAST,
                       s.last_event_created DESC NULLS LAST)
        ) r
      $$`);
await queryRunner.query(`
      CREATE OR REPLACE FUNCTION licensing.license_state(org uuid, tiers jsonb, grace_s bigint)
      RETURNS TABLE (tier text, subscription_id text, is_active boolean, is_expired boolean, tier_known boolean,
                     limits jsonb, features jsonb, overage jsonb, sources jsonb, seats integer, ai_period bigint)
      LANGUAGE sql STABLE AS $$
        SELECT l.tier, l.subscription_id, l.is_active, l.is_expired, p.tier_known,
               p.limits || s.seat_limit || o.limits, p.features || o.features, p.overage,
               CASE WHEN s.seat_limit <> '{}' THEN '{"users": "seats"}'::jsonb ELSE '{}' END || o.sources,
               CASE WHEN p.per_seat THEN l.seats END,
               CASE WHEN l.tier <> 'free' AND l.is_active AND l.period_start IS NOT NULL THEN l.period_start
                    ELSE extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::bigint END
        FROM (
          SELECT COALESCE(c.tier, 'free') AS tier, c.subscription_id, c.period_start, c.seats,
                 COALESCE(c.tier IS NULL OR c.status IN ('active', 'trialing') OR c.in_grace, false) AS is_active,
                 COALESCE(c.tier IS NOT NULL AND (c.status IN ('unpaid', 'incomplete_expired', 'paused', 'canceled')
                                                  OR (c.status = 'past_due' AND NOT c.in_grace)), false) AS is_expired
          FROM (SELECT 1) AS one
          LEFT JOIN licensing.subscription_choice(org, tiers, grace_s) c ON c.chosen
        ) l
        CROSS JOIN LATERAL licensing.plan_in_force(tiers, l.tier, l.is_active) p
        CROSS JOIN LATERAL (
          SELECT CASE WHEN l.is_active AND p.per_seat AND l.seats IS NOT NULL
                      THEN jsonb_build_object('users', LEAST(l.seats, (p.tier_limits ->> 'users')::bigint)) ELSE '{}'::jsonb END AS seat_limit
        ) s
        CROSS JOIN (
          SELECT COALESCE(jsonb_object_agg(v.name, v.value) FILTER (WHERE jsonb_typeof(v.value) = 'number'), '{}') AS limits,
                 COALESCE(jsonb_object_agg(v.name, v.value) FILTER (WHERE jsonb_typeof(v.value) = 'boolean'), '{}') AS features,
                 COALESCE(jsonb_object_agg(v.name, 'override') FILTER (WHERE jsonb_typeof(v.value) = 'number'), '{}') AS sources
          FROM licensing.live_overrides(org) v
        ) o
      $$`);
    await queryRunner.query(`DROP FUNCTION licensing.subscribed_licenses(jsonb, bigint)`);
    await queryRunner.query(`DROP FUNCTION licensing.license_from(text, text, boolean)`);
    await queryRunner.query(`DROP FUNCTION licensing.subscription_choices(jsonb, bigint)`);
    await queryRunner.query(`DROP FUNCTION subscriptions.of_every_organisation(bigint)`);
  }
}
