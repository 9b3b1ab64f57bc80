import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plan versions (spec §17): each tier's definition as the tier table gave it, recorded at start when it changed
 * (version 1 the first seen). A version is never edited or deleted: a trigger refuses both.
 */
export class PlanVersions1764002320000 implements MigrationInterface {
  name = 'PlanVersions1764002320000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "plan_versions" (
        "tier" text NOT NULL,
        "version" integer NOT NULL,
        "definition" jsonb NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "plan_versions_pkey" PRIMARY KEY ("tier", "version")
      )`);
    await queryRunner.query(`
      CREATE FUNCTION plan_versions_never_edited() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'plan versions are never edited or deleted (spec §17): record a new one';
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER "plan_versions_never_edited" BEFORE UPDATE OR DELETE ON "plan_versions"
      FOR EACH ROW EXECUTE FUNCTION plan_versions_never_edited()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "plan_versions"`);
    await queryRunner.query(`DROP FUNCTION plan_versions_never_edited()`);
  }
}
