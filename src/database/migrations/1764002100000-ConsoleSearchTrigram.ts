import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console finds organisations by part of a name or of a member's email (`bob` → bob@acme.example): trigram
 * indexes (pg_trgm, a trusted extension since PostgreSQL 13, so the database's owner may create it) serve
 * `ILIKE '%…%'`, which a B-tree cannot. Declared on the entities with `synchronize: false` (TypeORM cannot
 * describe an operator class), so migration:check leaves them alone.
 */
export class ConsoleSearchTrigram1764002100000 implements MigrationInterface {
  name = 'ConsoleSearchTrigram1764002100000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await queryRunner.query(`CREATE INDEX "organisations_name_trgm_idx" ON "organisations" USING gin ("name" gin_trgm_ops)`);
    await queryRunner.query(`CREATE INDEX "users_email_trgm_idx" ON "users" USING gin ("email" gin_trgm_ops)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."users_email_trgm_idx"`);
    await queryRunner.query(`DROP INDEX "public"."organisations_name_trgm_idx"`);
    await queryRunner.query(`DROP EXTENSION IF EXISTS pg_trgm`);
  }
}
