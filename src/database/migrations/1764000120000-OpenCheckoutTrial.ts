import { MigrationInterface, QueryRunner } from 'typeorm';

/** The days of trial an open checkout gives: part of what it sells (spec §11.3). */
export class OpenCheckoutTrial1764000120000 implements MigrationInterface {
  name = 'OpenCheckoutTrial1764000120000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "open_checkouts" ADD "trial_days" integer NOT NULL DEFAULT 0`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "open_checkouts" DROP COLUMN "trial_days"`);
  }
}
