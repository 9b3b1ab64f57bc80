import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rollover (spec §16.1): `credits.roll_over(org, tiers, grace_s, urls)` makes the organisation's rollover grants of
 * its current period, once each: for every metric whose policy in force is credits and whose plan in force says
 * `rollover: {max}`, the included amount its previous period left unused (the limit in force less that period's
 * count, at most max) becomes a promotional grant (`rollover`), effective at the current period's start and
 * expiring at its end, through credits.grant with the reference `rollover:<metric>:<period start>`, so whichever
 * instance, job or caller makes it, there is one. The previous period is the organisation's latest counter of the
 * metric that began before the current period and no longer ago than the current period lasts (plus three days, for
 * months of other lengths); a period without a counter (no use recorded) rolls nothing over. The current period is
 * the license's (`ai_period`: the paid period while a paid license is active, else the calendar month, UTC); its
 * end the subscription's current_period_end, else the next month's start. Answers how many grants it made.
 */
export class CreditRollover1764002400000 implements MigrationInterface {
  name = 'CreditRollover1764002400000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION credits.roll_over(org uuid, tiers jsonb, grace_s bigint, urls text[]) RETURNS integer
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

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION credits.roll_over(uuid, jsonb, bigint, text[])`);
  }
}
