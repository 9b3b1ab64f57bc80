import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The functions the usage write calls once per statement with that statement's arrays plan their statements once
 * per session (`plan_cache_mode = force_generic_plan`; DatabaseFunction.genericPlans). PL/pgSQL caches their plans,
 * but PostgreSQL judged the generic plan of an array parameter dearer than a plan for its values and planned
 * credits.consume's statement again at every call: ~0.5 ms of a one-report statement's ~3.5 ms (docs/performance.md).
 */
const FUNCTIONS = [
  'credits.consume(uuid[], text[], bigint[], text[])',
  'credits.hold(uuid[], uuid[], text[], bigint[], timestamptz[])',
  'credits.settle_commits(uuid[], bigint[], jsonb[], bigint[], bigint[])',
  'notifications.capacity_crossed(uuid[], text[], bigint[], bigint[], text[])',
  'notifications.notices(uuid[], text[], json[], text[])',
  'billing.meter_usage(uuid[], text[], bigint[], text[], integer)',
];

export class GenericPlansForUsageWrite1764002540000 implements MigrationInterface {
  name = 'GenericPlansForUsageWrite1764002540000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const f of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${f} SET plan_cache_mode = force_generic_plan`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const f of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${f} RESET plan_cache_mode`);
  }
}
