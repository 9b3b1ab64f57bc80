import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The credits reads (spec §16.2): licensing publishes an organisation's counts of the current period
 * (`licensing.period_usage`), which the entitlements read and credits' own read (the included amount's `used`)
 * both call, so the rule of which counter is the period's is written once.
 */
export class CreditReads1764002310000 implements MigrationInterface {
  name = 'CreditReads1764002310000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Each metric's count in the current period (a metric counted per period: its billing period's counter; any
    // other: its one counter). A metric never reported has no row.
    await queryRunner.query(`
      CREATE FUNCTION licensing.period_usage(org uuid, tiers jsonb, ai_period bigint)
      RETURNS TABLE (metric text, used bigint)
      LANGUAGE sql STABLE AS $$
        SELECT c.metric, c.used FROM usage_counters c
        WHERE c.organisation_id = org AND c.period_start = licensing.counter_period(tiers, c.metric, ai_period)
      $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION licensing.period_usage(uuid, jsonb, bigint)`);
  }
}
