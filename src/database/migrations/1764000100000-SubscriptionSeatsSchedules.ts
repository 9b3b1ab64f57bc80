import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Seats, interval, cancellation at period end, trial end and the pending schedule of each provider
 * subscription (spec §11.5), and the seats an open checkout sells (spec §11.3).
 */
export class SubscriptionSeatsSchedules1764000100000 implements MigrationInterface {
  name = 'SubscriptionSeatsSchedules1764000100000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "open_checkouts" ADD "seats" integer`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "seats" integer`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "interval" text`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "cancel_at_period_end" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "trial_end" bigint`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "schedule_id" text`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "pending_change" jsonb`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "schedule_event_created" bigint`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "schedule_event_rank" smallint`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "schedule_event_rank"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "schedule_event_created"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "pending_change"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "schedule_id"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "trial_end"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "cancel_at_period_end"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "interval"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "seats"`);
    await queryRunner.query(`ALTER TABLE "open_checkouts" DROP COLUMN "seats"`);
  }
}
