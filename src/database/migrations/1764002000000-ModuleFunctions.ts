import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each module's reads (and the writes another module's statement hands it) as database functions, in a schema
 * named after the module: a statement that needs another module's data in its one round trip calls that
 * module's function by name instead of embedding SQL text on its tables. The license is computed by one of
 * them, licensing.license_state, which every reader calls.
 *
 * The reads are `LANGUAGE sql STABLE` (IMMUTABLE where they read no table), set-returning, without STRICT or a
 * SET clause: PostgreSQL then inlines them into the calling statement (plans as if the SQL were written there),
 * so a read stays one statement and is planned as before. The writes (VOLATILE) are PL/pgSQL, whose plans are
 * kept per connection. A later change of a rule is a new migration with CREATE OR REPLACE FUNCTION; the
 * current text of each function is in the newest migration that defines it (docs/architecture.md).
 */
export class ModuleFunctions1764002000000 implements MigrationInterface {
  name = 'ModuleFunctions1764002000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE SCHEMA identity`);
    await queryRunner.query(`CREATE SCHEMA subscriptions`);
    await queryRunner.query(`CREATE SCHEMA licensing`);
    await queryRunner.query(`CREATE SCHEMA notifications`);
    await queryRunner.query(`CREATE SCHEMA billing`);
    await queryRunner.query(`CREATE SCHEMA webhook`);

    // identity: organisations, memberships, sessions.
    await queryRunner.query(`
      CREATE FUNCTION identity.organisation(org uuid)
      RETURNS TABLE (id uuid, external_id text, provider_customer_id text)
      LANGUAGE sql STABLE AS $$
        SELECT o.id, o.external_id, o.provider_customer_id FROM organisations o WHERE o.id = org
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION identity.members(org uuid)
      RETURNS TABLE (user_id uuid, role text)
      LANGUAGE sql STABLE AS $$
        SELECT m.user_id, m.role FROM memberships m WHERE m.organisation_id = org
      $$`);
    // The user of the live session whose token's SHA-256 is `token` (zero or one row): the one definition of a
    // live session (not revoked, not expired).
    await queryRunner.query(`
      CREATE FUNCTION identity.live_session(token bytea)
      RETURNS TABLE (user_id uuid)
      LANGUAGE sql STABLE AS $$
        SELECT l.user_id FROM sessions l WHERE l.token_hash = token AND l.revoked_at IS NULL AND l.expires_at > now()
      $$`);
    // Whether a caller may read the organisation: a session token not yet verified (its SHA-256: a live session
    // of a member), a verified user (a member), or a trusted back-end (both NULL: the organisation exists).
    await queryRunner.query(`
      CREATE FUNCTION identity.access(org uuid, caller_user uuid, caller_token bytea)
      RETURNS TABLE (authenticated boolean, allowed boolean)
      LANGUAGE sql STABLE AS $$
        SELECT caller_token IS NULL OR s.user_id IS NOT NULL,
               CASE WHEN caller_token IS NOT NULL
                      THEN EXISTS (SELECT 1 FROM memberships m WHERE m.organisation_id = org AND m.user_id = s.user_id)
                    WHEN caller_user IS NOT NULL
                      THEN EXISTS (SELECT 1 FROM memberships m WHERE m.organisation_id = org AND m.user_id = caller_user)
                    ELSE EXISTS (SELECT 1 FROM organisations o WHERE o.id = org) END
        FROM (SELECT CASE WHEN caller_token IS NOT NULL THEN (SELECT l.user_id FROM identity.live_session(caller_token) l) END AS user_id) s
      $$`);

    // subscriptions: provider_subscriptions. Every subscription of the organisation (deleted ones too), with
    // why it cannot shape a license (NULL: it can; first reason in this order) and its grace (spec §5): past_due
    // counts from past_due_since (else the period's end) for grace_s seconds.
    await queryRunner.query(`
      CREATE FUNCTION subscriptions.of_organisation(org uuid, grace_s bigint)
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

    // licensing: the tier table's definitions, overrides, the license.
    // A tier's definition (rank: its place in the table; NULLs for a tier the table does not list). The one
    // place the license reads a tier's definition.
    await queryRunner.query(`
      CREATE FUNCTION licensing.tier_plan(tiers jsonb, tier_name text)
      RETURNS TABLE (rank integer, per_seat boolean, limits jsonb, overage jsonb, features jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT (p ->> 'rank')::int, COALESCE((p ->> 'per_seat')::boolean, false), p -> 'limits', p -> 'overage', p -> 'features'
        FROM (SELECT tiers -> tier_name AS p) t
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.live_overrides(org uuid)
      RETURNS TABLE (name text, value jsonb, expires_at timestamptz, note text, created_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT o.name, o.value, o.expires_at, o.note, o.created_at FROM entitlement_overrides o
        WHERE o.organisation_id = org AND (o.expires_at IS NULL OR o.expires_at > now())
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.expired_overrides()
      RETURNS TABLE (organisation_id uuid, expires_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT o.organisation_id, o.expires_at FROM entitlement_overrides o WHERE o.expires_at <= now()
      $$`);
    // The usage counter period a metric counts in: ai_tokens per billing period, any other metric as a gauge (0).
    await queryRunner.query(`
      CREATE FUNCTION licensing.counter_period(metric text, ai_period bigint) RETURNS bigint
      LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN metric = 'ai_tokens' THEN ai_period ELSE 0 END $$`);
    // The subscription the license follows (spec §5): the first candidate by live (active, trialing, in grace),
    // then tier rank, then newest event; every other one with the first reason it was not chosen.
    await queryRunner.query(`
      CREATE FUNCTION licensing.subscription_choice(org uuid, tiers jsonb, grace_s bigint)
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
    // The plan in force for a license of `tier_name` (spec §5): the tier's while the license is active and the
    // table lists it, else the free tier's; with the tier's own per_seat and limits (a per-seat tier's max).
    await queryRunner.query(`
      CREATE FUNCTION licensing.plan_in_force(tiers jsonb, tier_name text, active boolean)
      RETURNS TABLE (tier_known boolean, per_seat boolean, tier_limits jsonb, limits jsonb, overage jsonb, features jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank IS NOT NULL, t.per_seat, t.limits, p.limits, p.overage, p.features
        FROM licensing.tier_plan(tiers, tier_name) t
        CROSS JOIN LATERAL licensing.tier_plan(tiers, CASE WHEN active AND t.rank IS NOT NULL THEN tier_name ELSE 'free' END) p
      $$`);
    // The license (spec §5, §11, §12): one row, also for an organisation without subscriptions (free, active, not
    // expired) or one that does not exist. A per-seat tier's users limit is the subscription's seats, at most the
    // tier's max; the live overrides replace the plan's values whatever the tier. ai_period: the start of the
    // ai_tokens billing period (Unix seconds): the paid period while a paid license is active, else the month (UTC).
    await queryRunner.query(`
      CREATE FUNCTION licensing.license_state(org uuid, tiers jsonb, grace_s bigint)
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

    // notifications: notice states and the outbox.
    await queryRunner.query(`
      CREATE FUNCTION notifications.version(org uuid)
      RETURNS TABLE (version bigint)
      LANGUAGE sql STABLE AS $$
        SELECT COALESCE((SELECT n.version FROM notification_states n WHERE n.organisation_id = org), 0)
      $$`);
    // One message to every URL: the message (its body `{type, timestamp, data}`, data's license fields first),
    // a delivery per URL and each delivery's job. Answers the jobs added.
    await queryRunner.query(`
      CREATE FUNCTION notifications.enqueue(org uuid, message_type text, message_version bigint, tier text, is_active boolean,
                                            is_expired boolean, extra json, urls text[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        queued integer;
      BEGIN
        WITH data AS (
          SELECT json_object_agg(f.key, f.value ORDER BY f.part, f.n) AS data
          FROM (SELECT 1 AS part, e.* FROM json_each(json_build_object(
                  'organisation_id', org, 'external_id', (SELECT o.external_id FROM identity.organisation(org) o),
                  'tier', tier, 'is_active', is_active, 'is_expired', is_expired, 'version', message_version)) WITH ORDINALITY AS e(key, value, n)
                UNION ALL
                SELECT 2, e.* FROM json_each(COALESCE(extra, '{}'::json)) WITH ORDINALITY AS e(key, value, n)) f
        ),
        message AS (
          INSERT INTO notification_messages (id, organisation_id, type, version, body)
          SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), org, message_type, message_version,
                 json_build_object('type', message_type,
                                   'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                   'data', d.data)::text
          FROM data d
          RETURNING id
        ),
        delivery AS (
          INSERT INTO notification_deliveries (message_id, url)
          SELECT m.id, u.url FROM message m CROSS JOIN unnest(urls) AS u(url)
          RETURNING id
        ),
        jobs AS (
          SELECT j.id FROM delivery d,
               LATERAL graphile_worker.add_job('notification_delivery', json_build_object('delivery_id', d.id),
                                               job_key => 'notification_delivery:' || d.id) AS j
        )
        SELECT count(*) INTO queued FROM jobs;
        RETURN queued;
      END $$`);
    // usage.capacity messages (spec §10) for usage events that moved a metric across its limit in force, given
    // in event order: each organisation's notice state is bumped once by its number of crossings, under its row
    // lock (organisations in order), its messages get the versions in between, and their license fields are the
    // license last notified (what a receiver holds at the previous version). Answers the jobs added.
    await queryRunner.query(`
      CREATE FUNCTION notifications.capacity_crossed(orgs uuid[], metrics text[], used bigint[], limits bigint[], urls text[])
      RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        queued integer;
      BEGIN
        WITH crossed AS (
          SELECT c.organisation_id, c.metric, c.used_now, c.limit_now, c.used_now >= c.limit_now AS at_capacity,
                 row_number() OVER (PARTITION BY c.organisation_id ORDER BY c.n) AS rank,
                 count(*) OVER (PARTITION BY c.organisation_id) AS crossings
          FROM unnest(orgs, metrics, used, limits) WITH ORDINALITY AS c(organisation_id, metric, used_now, limit_now, n)
        ),
        bumped AS (
          INSERT INTO notification_states AS n (organisation_id, version)
          SELECT organisation_id, max(crossings) FROM crossed GROUP BY organisation_id ORDER BY organisation_id
          ON CONFLICT (organisation_id) DO UPDATE SET version = n.version + EXCLUDED.version
          RETURNING n.organisation_id, n.version, n.tier, n.is_active, n.is_expired
        )
        SELECT COALESCE(sum(notifications.enqueue(c.organisation_id, 'usage.capacity', b.version - c.crossings + c.rank, b.tier,
                                                  b.is_active, b.is_expired,
                                                  json_build_object('metric', c.metric, 'used', c.used_now, 'limit', c.limit_now,
                                                                    'at_capacity', c.at_capacity), urls)
                                     ORDER BY c.organisation_id, c.rank), 0)
        INTO queued
        FROM crossed c JOIN bumped b USING (organisation_id);
        RETURN queued;
      END $$`);

    // billing: meter windows (spec §13). Adds accepted increases of metered metrics to their windows, summed per
    // organisation and metric (windows picked in organisation order), for organisations with a provider
    // customer (usage before it has one is never reported). Answers the windows written.
    await queryRunner.query(`
      CREATE FUNCTION billing.meter_usage(orgs uuid[], metrics text[], amounts bigint[], metered text[], flush_s integer)
      RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        written integer;
      BEGIN
        WITH usage AS (
          SELECT a.organisation_id, a.metric, o.provider_customer_id AS customer, sum(a.amount) AS value
          FROM unnest(orgs, metrics, amounts) AS a(organisation_id, metric, amount)
          CROSS JOIN LATERAL identity.organisation(a.organisation_id) o
          WHERE a.amount > 0 AND a.metric = ANY (metered) AND o.provider_customer_id IS NOT NULL
          GROUP BY a.organisation_id, a.metric, o.provider_customer_id
          ORDER BY a.organisation_id, a.metric
        ),
        windows AS (
          INSERT INTO meter_windows AS w (organisation_id, metric, window_start, window_end, customer_id, value)
          SELECT s.organisation_id, s.metric, s.start, s.start + flush_s, s.customer, s.value
          FROM (SELECT u.*, meter_window_start(u.organisation_id, u.metric, flush_s) AS start FROM usage u) s
          ON CONFLICT (organisation_id, metric, window_start) DO UPDATE SET value = w.value + EXCLUDED.value
          RETURNING 1
        )
        SELECT count(*) INTO written FROM windows;
        RETURN written;
      END $$`);

    // webhook: the event ledger. The newest events of one subscription (by created, then arrival), whatever their outcome.
    await queryRunner.query(`
      CREATE FUNCTION webhook.subscription_events(subscription text, max_rows integer)
      RETURNS TABLE (id text, type text, created bigint, status text, reason text)
      LANGUAGE sql STABLE AS $$
        SELECT e.id, e.type, e.created, e.status, e.reason FROM webhook_events e
        WHERE e.subscription_id = subscription
        ORDER BY e.created DESC, e.received_at DESC LIMIT max_rows
      $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const schema of ['webhook', 'billing', 'notifications', 'licensing', 'subscriptions', 'identity']) {
      await queryRunner.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  }
}
