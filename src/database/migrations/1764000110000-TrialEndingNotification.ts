import { MigrationInterface, QueryRunner } from 'typeorm';

/** The `trial.ending` notification (spec §11.5). */
export class TrialEndingNotification1764000110000 implements MigrationInterface {
  name = 'TrialEndingNotification1764000110000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "notification_messages" DROP CONSTRAINT "notification_messages_type_check"`);
    await queryRunner.query(
      `ALTER TABLE "notification_messages" ADD CONSTRAINT "notification_messages_type_check" CHECK (type IN ('license.updated', 'usage.capacity', 'trial.ending'))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM "notification_messages" WHERE type = 'trial.ending'`);
    await queryRunner.query(`ALTER TABLE "notification_messages" DROP CONSTRAINT "notification_messages_type_check"`);
    await queryRunner.query(
      `ALTER TABLE "notification_messages" ADD CONSTRAINT "notification_messages_type_check" CHECK (type IN ('license.updated', 'usage.capacity'))`,
    );
  }
}
