import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `credits.roll_over` (1764002400000-CreditRollover) on plan versions (spec §17): grandfathering (1764002410000)
 * gave `licensing.plan_in_force` the version's definition as a fourth argument, and the three-argument one that
 * roll_over called is gone. The rollover now reads the plan of the subscription's version, as the license does
 * (`subscriptions.plan_version`; the free tier: the table), so a grandfathered customer rolls over what its version
 * says. Otherwise the function is as it was. This migration holds its current text.
 */
export class RolloverOnPlanVersion1764002420000 implements MigrationInterface {
  name = 'RolloverOnPlanVersion1764002420000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION credits.roll_over(org uuid, tiers jsonb, grace_s bigint, urls text[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        r record;
        made integer := 0;
        g record;
      BEGIN
        FOR r IN
          SELECT m.metric, LEAST(GREATEST((s.limits ->> m.metric)::bigint - prev.used, 0), (p.rollover ->> m.metric)::bigint) AS unused,
                 q.period_start, q.period_end
          FROM licensing.license_state(org, tiers, grace_s) s
          LEFT JOIN LATERAL subscriptions.plan_version(s.subscription_id, s.tier) v ON true
          CROSS JOIN LATERAL licensing.plan_in_force(tiers, s.tier, s.is_active, CASE WHEN s.tier <> 'free' THEN v.definition END) p
          CROSS JOIN LATERAL jsonb_object_keys(p.rollover) m(metric)
          CROSS JOIN LATERAL (
            SELECT licensing.counter_period(tiers, m.metric, s.ai_period) AS period_start,
                   COALESCE((SELECT o.period_end FROM subscriptions.of_organisation(org, grace_s) o
                             WHERE o.subscription_id = s.subscription_id AND s.tier <> 'free' AND s.is_active AND o.period_end > s.ai_period),
                            extract(epoch FROM (to_timestamp(s.ai_period) AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC')::bigint) AS period_end) q
          CROSS JOIN LATERAL (
            SELECT c.used FROM usage_counters c
            WHERE c.organisation_id = org AND c.metric = m.metric AND c.period_start < q.period_start
              AND c.period_start >= q.period_start - (q.period_end - q.period_start) - 3 * 86400
            ORDER BY c.period_start DESC LIMIT 1) prev
          WHERE s.overage ->> m.metric = 'credits' AND q.period_start > 0
          ORDER BY m.metric
        LOOP
          CONTINUE WHEN r.unused IS NULL OR r.unused <= 0;
          SELECT * INTO g FROM credits.grant(org, r.metric, r.unused, 'promotional', 'rollover', 'rollover:' || r.metric || ':' || r.period_start,
                                             NULL, to_timestamp(r.period_start), to_timestamp(r.period_end), NULL, NULL, NULL, urls);
          IF g.created THEN
            made := made + 1;
          END IF;
        END LOOP;
        RETURN made;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION credits.roll_over(org uuid, tiers jsonb, grace_s bigint, urls text[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        r record;
        made integer := 0;
        g record;
      BEGIN
        FOR r IN
          SELECT m.metric, LEAST(GREATEST((s.limits ->> m.metric)::bigint - prev.used, 0), (p.rollover ->> m.metric)::bigint) AS unused,
                 q.period_start, q.period_end
          FROM licensing.license_state(org, tiers, grace_s) s
          CROSS JOIN LATERAL licensing.plan_in_force(tiers, s.tier, s.is_active) p
          CROSS JOIN LATERAL jsonb_object_keys(p.rollover) m(metric)
          CROSS JOIN LATERAL (
            SELECT licensing.counter_period(tiers, m.metric, s.ai_period) AS period_start,
                   COALESCE((SELECT o.period_end FROM subscriptions.of_organisation(org, grace_s) o
                             WHERE o.subscription_id = s.subscription_id AND s.tier <> 'free' AND s.is_active AND o.period_end > s.ai_period),
                            extract(epoch FROM (to_timestamp(s.ai_period) AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC')::bigint) AS period_end) q
          CROSS JOIN LATERAL (
            SELECT c.used FROM usage_counters c
            WHERE c.organisation_id = org AND c.metric = m.metric AND c.period_start < q.period_start
              AND c.period_start >= q.period_start - (q.period_end - q.period_start) - 3 * 86400
            ORDER BY c.period_start DESC LIMIT 1) prev
          WHERE s.overage ->> m.metric = 'credits' AND q.period_start > 0
          ORDER BY m.metric
        LOOP
          CONTINUE WHEN r.unused IS NULL OR r.unused <= 0;
          SELECT * INTO g FROM credits.grant(org, r.metric, r.unused, 'promotional', 'rollover', 'rollover:' || r.metric || ':' || r.period_start,
                                             NULL, to_timestamp(r.period_start), to_timestamp(r.period_end), NULL, NULL, NULL, urls);
          IF g.created THEN
            made := made + 1;
          END IF;
        END LOOP;
        RETURN made;
      END $$`);
  }
}
