import { MigrationInterface, QueryRunner } from 'typeorm';

/** A subscription change under way that lowers the users limit caps member additions (spec §11.4). */
export class SubscriptionChangeUsersCap1764001438000 implements MigrationInterface {
  name = 'SubscriptionChangeUsersCap1764001438000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscription_change_claims" ADD "users_cap" integer`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscription_change_claims" DROP COLUMN "users_cap"`);
  }
}
