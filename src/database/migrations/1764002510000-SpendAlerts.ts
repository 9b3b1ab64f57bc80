import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Spend alerts (spec §16.4): `usage.threshold` and `credits.low`, made by the usage write in its one statement.
 *
 * - Each usage counter remembers the highest of USAGE_ALERT_THRESHOLDS announced in its period
 *   (`alerted_threshold`) and whether the last usage event left a credits metric's `available` below its
 *   low threshold (`credits_low`). The usage write holds the counter's row lock, so each threshold is announced
 *   once per organisation, metric and period, and each fall below the low threshold once, whichever instance
 *   writes.
 * - credits: `credits.recharge_threshold`, the threshold of an organisation's enabled automatic top-up of a metric
 *   (the low threshold when there is one).
 * - notifications: `notifications.notices`, several messages of any types in one call (each organisation's
 *   notice state bumped once, its messages given the versions in between, in the order given), as
 *   `notifications.capacity_crossed` does for `usage.capacity`.
 */
export class SpendAlerts1764002510000 implements MigrationInterface {
  name = 'SpendAlerts1764002510000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_counters" ADD "alerted_threshold" integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE "usage_counters" ADD "credits_low" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`
      CREATE FUNCTION credits.recharge_threshold(org uuid, metric_name text) RETURNS TABLE (threshold bigint)
      LANGUAGE sql STABLE AS $$
        SELECT a.threshold FROM credit_auto_recharges a WHERE a.organisation_id = org AND a.metric = metric_name AND a.enabled
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION notifications.notices(orgs uuid[], message_types text[], extras json[], urls text[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        queued integer;
      BEGIN
        IF COALESCE(cardinality(urls), 0) = 0 THEN
          RETURN 0;
        END IF;
        WITH m AS (
          SELECT x.org, x.message_type, x.extra, row_number() OVER (PARTITION BY x.org ORDER BY x.n) AS rank,
                 count(*) OVER (PARTITION BY x.org) AS total
          FROM unnest(orgs, message_types, extras) WITH ORDINALITY AS x(org, message_type, extra, n)
        ),
        bumped AS (
          INSERT INTO notification_states AS s (organisation_id, version)
          SELECT m.org, max(m.total) FROM m GROUP BY m.org ORDER BY m.org
          ON CONFLICT (organisation_id) DO UPDATE SET version = s.version + EXCLUDED.version
          RETURNING s.organisation_id, s.version, s.tier, s.is_active, s.is_expired
        )
        SELECT COALESCE(sum(notifications.enqueue(m.org, m.message_type, b.version - m.total + m.rank, b.tier, b.is_active, b.is_expired,
                                                  m.extra, urls) ORDER BY m.org, m.rank), 0)
        INTO queued
        FROM m JOIN bumped b ON b.organisation_id = m.org;
        RETURN queued;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION notifications.notices(uuid[], text[], json[], text[])`);
    await queryRunner.query(`DROP FUNCTION credits.recharge_threshold(uuid, text)`);
    await queryRunner.query(`ALTER TABLE "usage_counters" DROP COLUMN "credits_low"`);
    await queryRunner.query(`ALTER TABLE "usage_counters" DROP COLUMN "alerted_threshold"`);
  }
}
