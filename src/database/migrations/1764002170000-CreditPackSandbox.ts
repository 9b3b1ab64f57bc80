import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sandbox sells credit packs (checkout sessions of mode payment, spec §16.6) and charges automatic top-ups:
 * customers made through the API with a default card (which the portal can make decline the next charge), and
 * invoices of no subscription that go draft → open → paid.
 */
export class CreditPackSandbox1764002170000 implements MigrationInterface {
  name = 'CreditPackSandbox1764002170000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" ADD "mode" text NOT NULL DEFAULT 'subscription'`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" ADD "pack" text`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" ADD "invoice_id" text`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" ALTER COLUMN "tier" DROP NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "sandbox_checkout_sessions" ADD CONSTRAINT "sandbox_checkout_sessions_mode_check" CHECK ((mode = 'subscription' AND tier IS NOT NULL) OR (mode = 'payment' AND pack IS NOT NULL))`,
    );
    await queryRunner.query(`ALTER TABLE "sandbox_customers" ADD "metadata" jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(`ALTER TABLE "sandbox_customers" ADD "default_payment_method" text`);
    await queryRunner.query(`ALTER TABLE "sandbox_customers" ADD "decline_next_charge" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ADD "status" text NOT NULL DEFAULT 'paid'`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ADD "metadata" jsonb NOT NULL DEFAULT '{}'`);
    // Every invoice so far was paid as it was made.
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ADD "created" bigint`);
    await queryRunner.query(`UPDATE "sandbox_invoices" SET "created" = "paid_at"`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "created" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "subscription_id" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "tier" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "paid_at" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ADD CONSTRAINT "sandbox_invoices_status_check" CHECK (status IN ('draft', 'open', 'paid'))`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // What the schema before could not hold: pack checkouts, and invoices of no subscription or not paid.
    await queryRunner.query(`DELETE FROM "sandbox_invoices" WHERE "subscription_id" IS NULL OR "paid_at" IS NULL`);
    await queryRunner.query(`DELETE FROM "sandbox_checkout_sessions" WHERE "mode" = 'payment'`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" DROP CONSTRAINT "sandbox_invoices_status_check"`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "paid_at" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "tier" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" ALTER COLUMN "subscription_id" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" DROP COLUMN "created"`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" DROP COLUMN "metadata"`);
    await queryRunner.query(`ALTER TABLE "sandbox_invoices" DROP COLUMN "status"`);
    await queryRunner.query(`ALTER TABLE "sandbox_customers" DROP COLUMN "decline_next_charge"`);
    await queryRunner.query(`ALTER TABLE "sandbox_customers" DROP COLUMN "default_payment_method"`);
    await queryRunner.query(`ALTER TABLE "sandbox_customers" DROP COLUMN "metadata"`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" DROP CONSTRAINT "sandbox_checkout_sessions_mode_check"`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" ALTER COLUMN "tier" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" DROP COLUMN "invoice_id"`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" DROP COLUMN "pack"`);
    await queryRunner.query(`ALTER TABLE "sandbox_checkout_sessions" DROP COLUMN "mode"`);
  }
}
