import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage counters for the tier table's further metrics (spec §11.1), reported like projects: a counter's
 * metric is any metric name but `users` (counted from memberships), no longer only projects or ai_tokens.
 * Which names a report may use is the running tier table's to say (UsageService), not the schema's.
 */
export class FurtherMetricCounters1764000900000 implements MigrationInterface {
  name = 'FurtherMetricCounters1764000900000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_counters" DROP CONSTRAINT "usage_counters_metric_check"`);
    await queryRunner.query(
      `ALTER TABLE "usage_counters" ADD CONSTRAINT "usage_counters_metric_check" CHECK (metric ~ '^[a-z][a-z0-9_]{0,63}$' AND metric <> 'users')`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_counters" DROP CONSTRAINT "usage_counters_metric_check"`);
    await queryRunner.query(`ALTER TABLE "usage_counters" ADD CONSTRAINT "usage_counters_metric_check" CHECK (metric IN ('projects', 'ai_tokens'))`);
  }
}
