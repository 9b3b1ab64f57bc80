import { MigrationInterface, QueryRunner } from 'typeorm';

/** The features, limits in force and seats last notified per organisation (spec §10, §11.5, §12). */
export class NotifiedEntitlements1764000400001 implements MigrationInterface {
  name = 'NotifiedEntitlements1764000400001';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "notification_states" ADD "entitlements" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "notification_states" DROP COLUMN "entitlements"`);
  }
}
