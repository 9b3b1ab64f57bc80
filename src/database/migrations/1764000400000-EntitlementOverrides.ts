import { MigrationInterface, QueryRunner } from 'typeorm';

/** Per-organisation overrides of features and limits (spec §12), read by the license SQL. */
export class EntitlementOverrides1764000400000 implements MigrationInterface {
  name = 'EntitlementOverrides1764000400000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "entitlement_overrides" ("organisation_id" uuid NOT NULL, "name" text NOT NULL, "value" jsonb NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE, "note" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "entitlement_overrides_value_check" CHECK (jsonb_typeof(value) = 'boolean' OR (jsonb_typeof(value) = 'number' AND (value)::numeric >= 0)), CONSTRAINT "entitlement_overrides_note_check" CHECK (char_length(note) <= 500), CONSTRAINT "entitlement_overrides_pkey" PRIMARY KEY ("organisation_id", "name"))`,
    );
    await queryRunner.query(`CREATE INDEX "entitlement_overrides_expires_at_idx" ON "entitlement_overrides" ("expires_at") WHERE expires_at IS NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "entitlement_overrides" ADD CONSTRAINT "entitlement_overrides_organisation_id_fkey" FOREIGN KEY ("organisation_id") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "entitlement_overrides" DROP CONSTRAINT "entitlement_overrides_organisation_id_fkey"`);
    await queryRunner.query(`DROP INDEX "public"."entitlement_overrides_expires_at_idx"`);
    await queryRunner.query(`DROP TABLE "entitlement_overrides"`);
  }
}
