import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operator console's pages (spec §14): the reconciliation's runs, recorded whoever starts them, and the
 * indexes its lists need at scale (organisations by name; webhook events per organisation and per type).
 */
export class ConsolePages1764000810000 implements MigrationInterface {
  name = 'ConsolePages1764000810000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "provider_sync_runs" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "trigger" text NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "finished_at" TIMESTAMP WITH TIME ZONE, "outcome" text NOT NULL DEFAULT 'running', "summary" jsonb, "error" text, CONSTRAINT "provider_sync_runs_outcome_check" CHECK (outcome IN ('running', 'ok', 'failed')), CONSTRAINT "provider_sync_runs_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "provider_sync_runs_started_idx" ON "provider_sync_runs" ("started_at")`);
    await queryRunner.query(`CREATE INDEX "organisations_name_idx" ON "organisations" ("name", "id")`);
    await queryRunner.query(`CREATE INDEX "webhook_events_type_idx" ON "webhook_events" ("type", "received_at")`);
    await queryRunner.query(`CREATE INDEX "webhook_events_organisation_idx" ON "webhook_events" ("organisation_id", "received_at")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."webhook_events_organisation_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_events_type_idx"`);
    await queryRunner.query(`DROP INDEX "public"."organisations_name_idx"`);
    await queryRunner.query(`DROP INDEX "public"."provider_sync_runs_started_idx"`);
    await queryRunner.query(`DROP TABLE "provider_sync_runs"`);
  }
}
