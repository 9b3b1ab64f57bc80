import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The functions the usage write calls once per statement (DatabaseFunction.genericPlans) plan their statements once
 * per session (1764002540000-GenericPlansForUsageWrite.ts), at the session's first call: on a new database, while
 * the tables are empty. With the tables believed empty, PostgreSQL planned credits.settle_commits' look-up of the
 * reservations it settles as a scan of usage_reservations, which the session then kept as the table grew (one more
 * row per hold, ~1 ms a statement after a few thousand: docs/performance.md). Their statements only ever look rows up
 * by key, so sequential scans are off for them (`enable_seqscan = off`): an index probe whatever the tables' size.
 */
const FUNCTIONS = [
  'credits.consume(uuid[], text[], bigint[], text[])',
  'credits.hold(uuid[], uuid[], text[], bigint[], timestamptz[])',
  'credits.settle_commits(uuid[], bigint[], jsonb[], bigint[], bigint[])',
  'notifications.capacity_crossed(uuid[], text[], bigint[], bigint[], text[])',
  'notifications.notices(uuid[], text[], json[], text[])',
  'billing.meter_usage(uuid[], text[], bigint[], text[], integer)',
];

export class IndexProbesForUsageWrite1764002560000 implements MigrationInterface {
  name = 'IndexProbesForUsageWrite1764002560000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const f of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${f} SET enable_seqscan = off`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const f of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${f} RESET enable_seqscan`);
  }
}
