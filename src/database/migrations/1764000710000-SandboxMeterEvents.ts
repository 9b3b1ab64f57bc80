import { MigrationInterface, QueryRunner } from 'typeorm';

/** The sandbox provider's billing meter events (spec §13), shown on its invoice pages. */
export class SandboxMeterEvents1764000710000 implements MigrationInterface {
  name = 'SandboxMeterEvents1764000710000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "sandbox_meter_events" ("identifier" text NOT NULL, "event_name" text NOT NULL, "customer_id" text NOT NULL, "value" bigint NOT NULL, "timestamp" bigint NOT NULL, CONSTRAINT "sandbox_meter_events_pkey" PRIMARY KEY ("identifier"))`,
    );
    await queryRunner.query(`CREATE INDEX "sandbox_meter_events_customer_idx" ON "sandbox_meter_events" ("customer_id", "timestamp") `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."sandbox_meter_events_customer_idx"`);
    await queryRunner.query(`DROP TABLE "sandbox_meter_events"`);
  }
}
