import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Currencies (spec §17): an open checkout records the currency it was asked in (a checkout in another currency
 * is another plan), and a sandbox subscription the currency of its checkout, which its invoices are in.
 */
export class CheckoutCurrency1764002530000 implements MigrationInterface {
  name = 'CheckoutCurrency1764002530000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "open_checkouts" ADD "currency" text`);
    await queryRunner.query(`ALTER TABLE "sandbox_subscriptions" ADD "currency" text NOT NULL DEFAULT 'eur'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "sandbox_subscriptions" DROP COLUMN "currency"`);
    await queryRunner.query(`ALTER TABLE "open_checkouts" DROP COLUMN "currency"`);
  }
}
