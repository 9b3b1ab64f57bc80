import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Grandfathering (spec §17): a subscription keeps the plan version of its tier that was newest when it started or
 * last changed tier, and its license comes from that version.
 *
 * - `provider_subscriptions.plan_version`: set by a trigger, the one place of the rule, whatever writes the row
 *   (an event, the reconciliation, a change through 11.4 or the portal): on insert, and when the tier changes, to
 *   the tier's newest version; otherwise kept. Rows from before are on their tier's newest version now, or (no
 *   version recorded yet) on its first once the next start records it (PlanVersionsRepository).
 * - `subscriptions.plan_version(sub, tier)`: the version a subscription of that tier is on (no subscription, or
 *   none recorded: the tier's newest) with its definition and when it was recorded.
 * - `licensing.tier_plan_at(tiers, tier, definition)`: a tier's plan from a version's definition, in the form of
 *   `licensing.tier_plan` (the table's metrics and features; what the version does not name: 0, block, false);
 *   NULL definition: the table's. `licensing.plan_in_force` takes the definition; the free tier's plan is the
 *   table's, its newest version.
 * - `licensing.license_state` gains `plan_version` and `plan_version_at` (when it was recorded).
 */
export class Grandfathering1764002410000 implements MigrationInterface {
  name = 'Grandfathering1764002410000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "plan_version" integer`);
    await queryRunner.query(`
      UPDATE provider_subscriptions s SET plan_version = (SELECT max(p.version) FROM plan_versions p WHERE p.tier = s.tier)
      WHERE s.tier IS NOT NULL`);
    await queryRunner.query(`
      CREATE FUNCTION provider_subscriptions_keep_plan_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.tier IS DISTINCT FROM OLD.tier THEN
          NEW.plan_version := (SELECT max(p.version) FROM plan_versions p WHERE p.tier = NEW.tier);
        END IF;
        RETURN NEW;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER "provider_subscriptions_plan_version" BEFORE INSERT OR UPDATE ON "provider_subscriptions"
      FOR EACH ROW EXECUTE FUNCTION provider_subscriptions_keep_plan_version()`);
    await queryRunner.query(`
      CREATE FUNCTION subscriptions.plan_version(sub text, tier_name text)
      RETURNS TABLE (version integer, definition jsonb, created_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT p.version, p.definition, p.created_at FROM plan_versions p
        WHERE p.tier = tier_name
          AND p.version = COALESCE((SELECT s.plan_version FROM provider_subscriptions s WHERE s.subscription_id = sub AND s.tier = tier_name),
                                   (SELECT max(q.version) FROM plan_versions q WHERE q.tier = tier_name))
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.tier_plan_at(tiers jsonb, tier_name text, definition jsonb)
      RETURNS TABLE (rank integer, per_seat boolean, limits jsonb, overage jsonb, features jsonb, rollover jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank,
               CASE WHEN definition IS NULL THEN t.per_seat ELSE COALESCE((definition ->> 'per_seat')::boolean, false) END,
               CASE WHEN definition IS NULL THEN t.limits
                    ELSE (SELECT COALESCE(jsonb_object_agg(k, COALESCE(definition -> 'limits' -> k, '0')), '{}')
                          FROM jsonb_object_keys(tiers -> 'free' -> 'limits') k) END,
               CASE WHEN definition IS NULL THEN t.overage
                    ELSE (SELECT COALESCE(jsonb_object_agg(k, COALESCE(definition -> 'overage' -> k, '"block"')), '{}')
                          FROM jsonb_object_keys(tiers -> 'free' -> 'limits') k) END,
               CASE WHEN definition IS NULL THEN t.features
                    ELSE (SELECT COALESCE(jsonb_object_agg(k, COALESCE(definition -> 'features' -> k, 'false')), '{}')
                          FROM jsonb_object_keys(tiers -> 'free' -> 'features') k) END,
               CASE WHEN definition IS NULL THEN t.rollover ELSE COALESCE(definition -> 'rollover', '{}') END
        FROM licensing.tier_plan(tiers, tier_name) t
      $$`);
    await queryRunner.query(`DROP FUNCTION licensing.plan_in_force(jsonb, text, boolean)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.plan_in_force(tiers jsonb, tier_name text, active boolean, definition jsonb)
      RETURNS TABLE (tier_known boolean, per_seat boolean, tier_limits jsonb, limits jsonb, overage jsonb, features jsonb, rollover jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank IS NOT NULL, t.per_seat, t.limits, p.limits, p.overage, p.features, p.rollover
        FROM licensing.tier_plan_at(tiers, tier_name, definition) t
        CROSS JOIN LATERAL (SELECT active AND t.rank IS NOT NULL AS own) k
        CROSS JOIN LATERAL licensing.tier_plan_at(tiers, CASE WHEN k.own THEN tier_name ELSE 'free' END, CASE WHEN k.own THEN definition END) p
      $$`);
    await queryRunner.query(`DROP FUNCTION licensing.license_state(uuid, jsonb, bigint)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.license_state(org uuid, tiers jsonb, grace_s bigint)
      RETURNS TABLE (tier text, subscription_id text, is_active boolean, is_expired boolean, tier_known boolean,
                     limits jsonb, features jsonb, overage jsonb, sources jsonb, seats integer, ai_period bigint,
                     plan_version integer, plan_version_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT l.tier, l.subscription_id, l.is_active, l.is_expired, p.tier_known,
               p.limits || s.seat_limit || o.limits, p.features || o.features, p.overage,
               CASE WHEN s.seat_limit <> '{}' THEN '{"users": "seats"}'::jsonb ELSE '{}' END || o.sources,
               CASE WHEN p.per_seat THEN l.seats END,
               CASE WHEN l.tier <> 'free' AND l.is_active AND l.period_start IS NOT NULL THEN l.period_start
                    ELSE extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::bigint END,
               v.version, v.created_at
        FROM (
          SELECT f.tier, c.subscription_id, c.period_start, c.seats, f.is_active, f.is_expired
          FROM (SELECT 1) AS one
          LEFT JOIN licensing.subscription_choices(tiers, grace_s) c ON c.organisation_id = org AND c.chosen
          CROSS JOIN LATERAL licensing.license_from(c.tier, c.status, c.in_grace) f
        ) l
        LEFT JOIN LATERAL subscriptions.plan_version(l.subscription_id, l.tier) v ON true
        CROSS JOIN LATERAL licensing.plan_in_force(tiers, l.tier, l.is_active, CASE WHEN l.tier <> 'free' THEN v.definition END) p
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

  /** license_state and plan_in_force as 1764002213000-LicensesInOnePass and 1764002200000-CreditConsumption left them. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION licensing.license_state(uuid, jsonb, bigint)`);
    await queryRunner.query(`DROP FUNCTION licensing.plan_in_force(jsonb, text, boolean, jsonb)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.plan_in_force(tiers jsonb, tier_name text, active boolean)
      RETURNS TABLE (tier_known boolean, per_seat boolean, tier_limits jsonb, limits jsonb, overage jsonb, features jsonb, rollover jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank IS NOT NULL, t.per_seat, t.limits, p.limits, p.overage, p.features, p.rollover
        FROM licensing.tier_plan(tiers, tier_name) t
        CROSS JOIN LATERAL licensing.tier_plan(tiers, CASE WHEN active AND t.rank IS NOT NULL THEN tier_name ELSE 'free' END) p
      $$`);
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
    await queryRunner.query(`DROP FUNCTION licensing.tier_plan_at(jsonb, text, jsonb)`);
    await queryRunner.query(`DROP FUNCTION subscriptions.plan_version(text, text)`);
    await queryRunner.query(`DROP TRIGGER "provider_subscriptions_plan_version" ON "provider_subscriptions"`);
    await queryRunner.query(`DROP FUNCTION provider_subscriptions_keep_plan_version()`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "plan_version"`);
  }
}
