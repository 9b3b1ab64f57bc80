import { MigrationInterface, QueryRunner } from 'typeorm';

/** The operator console's list of failed notifications, without reading every delivery (spec §14). */
export class ConsoleNotificationIndex1764000820000 implements MigrationInterface {
  name = 'ConsoleNotificationIndex1764000820000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "notification_deliveries_failed_idx" ON "notification_deliveries" ("message_id") WHERE status = 'failed'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."notification_deliveries_failed_idx"`);
  }
}
