import { MigrationInterface, QueryRunner } from 'typeorm';

/** A subscription change whose outcome at the provider is not known yet keeps its claim (spec §11.4). */
export class SubscriptionChangeAwaiting1764002066000 implements MigrationInterface {
  name = 'SubscriptionChangeAwaiting1764002066000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscription_change_claims" ADD "awaiting" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscription_change_claims" DROP COLUMN "awaiting"`);
  }
}
