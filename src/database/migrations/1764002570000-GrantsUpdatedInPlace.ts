import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The rows every usage write rewrites stay on their page (docs/performance.md). A grant's indexes named `remaining`
 * in their predicates (`remaining > 0`), so each consumption was an update with a new entry in each of its
 * indexes, and its old versions and entries stayed until a vacuum: after the bench's batch steps, reading an
 * organisation's three grants walked 63 index entries. The indexes now name `exhausted` (`remaining = 0`, a stored
 * generated column), which a consumption that leaves something does not change: PostgreSQL rewrites the row on its
 * page (a HOT update, no index entry) and prunes the old versions when it next reads the page. Both tables that
 * every report rewrites (the grants and the usage counters) keep half of each page free for those new versions.
 */
const COUNTING_GRANTS = (open: string) => `
  CREATE OR REPLACE FUNCTION credits.counting_grants(org uuid)
  RETURNS TABLE (id uuid, metric text, amount bigint, remaining bigint, category text, priority integer, source text,
                 effective_at timestamptz, expires_at timestamptz, note text, created_at timestamptz, draw_order bigint)
  LANGUAGE sql STABLE AS $$
    SELECT g.id, g.metric, g.amount, g.remaining, g.category, g.priority, g.source, g.effective_at, g.expires_at, g.note,
           g.created_at,
           row_number() OVER (PARTITION BY g.metric ORDER BY g.priority, g.expires_at NULLS LAST, g.category = 'paid',
                                                           g.effective_at, g.created_at, g.id)
    FROM credit_grants g
    WHERE g.organisation_id = org AND ${open} AND g.voided_at IS NULL
      AND g.effective_at <= now() AND (g.expires_at IS NULL OR g.expires_at > now())
  $$`;

export class GrantsUpdatedInPlace1764002570000 implements MigrationInterface {
  name = 'GrantsUpdatedInPlace1764002570000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Before the column, whose addition rewrites the table with the new fill factor.
    await queryRunner.query(`ALTER TABLE "credit_grants" SET (fillfactor = 50)`);
    await queryRunner.query(`ALTER TABLE "usage_counters" SET (fillfactor = 50)`);
    await queryRunner.query(`ALTER TABLE "credit_grants" ADD "exhausted" boolean GENERATED ALWAYS AS (remaining = 0) STORED NOT NULL`);
    // Where TypeORM keeps a generated column's expression, to compare the entity's with (migration:check): its
    // table as TypeORM makes it, which the service's migrations (run without entities) would not make.
    await queryRunner.query(
      `CREATE TABLE IF NOT EXISTS "typeorm_metadata" ("type" character varying NOT NULL, "database" character varying,
         "schema" character varying, "table" character varying, "name" character varying, "value" text)`,
    );
    await queryRunner.query(
      `INSERT INTO "typeorm_metadata" ("database", "schema", "table", "type", "name", "value")
       VALUES (current_database(), current_schema(), 'credit_grants', 'GENERATED_COLUMN', 'exhausted', 'remaining = 0')`,
    );
    await queryRunner.query(`DROP INDEX "credit_grants_open_idx"`);
    await queryRunner.query(`DROP INDEX "credit_grants_expiry_idx"`);
    await queryRunner.query(`CREATE INDEX "credit_grants_open_idx" ON "credit_grants" ("organisation_id", "metric") WHERE NOT exhausted`);
    await queryRunner.query(`CREATE INDEX "credit_grants_expiry_idx" ON "credit_grants" ("expires_at") WHERE NOT exhausted AND expires_at IS NOT NULL`);
    await queryRunner.query(COUNTING_GRANTS('NOT g.exhausted'));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(COUNTING_GRANTS('g.remaining > 0'));
    await queryRunner.query(`DROP INDEX "credit_grants_open_idx"`);
    await queryRunner.query(`DROP INDEX "credit_grants_expiry_idx"`);
    await queryRunner.query(`CREATE INDEX "credit_grants_open_idx" ON "credit_grants" ("organisation_id", "metric") WHERE remaining > 0`);
    await queryRunner.query(`CREATE INDEX "credit_grants_expiry_idx" ON "credit_grants" ("expires_at") WHERE remaining > 0 AND expires_at IS NOT NULL`);
    await queryRunner.query(
      `DELETE FROM "typeorm_metadata" WHERE "type" = 'GENERATED_COLUMN' AND "database" = current_database() AND "schema" = current_schema()
         AND "table" = 'credit_grants' AND "name" = 'exhausted'`,
    );
    await queryRunner.query(`ALTER TABLE "credit_grants" DROP COLUMN "exhausted"`);
    await queryRunner.query(`ALTER TABLE "usage_counters" RESET (fillfactor)`);
    await queryRunner.query(`ALTER TABLE "credit_grants" RESET (fillfactor)`);
  }
}
