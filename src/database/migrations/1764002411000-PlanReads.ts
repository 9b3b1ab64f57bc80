import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The plan versions' reads (spec §17), which subscriptions publishes for the admin routes (licensing's plans
 * list and migration preview): every version recorded, and every live subscription with the plan version it is
 * on (live as the license counts it: active, trialing or within grace, and able to shape a license).
 */
export class PlanReads1764002411000 implements MigrationInterface {
  name = 'PlanReads1764002411000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION subscriptions.plan_versions()
      RETURNS TABLE (tier text, version integer, definition jsonb, created_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT p.tier, p.version, p.definition, p.created_at FROM plan_versions p
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION subscriptions.live_on_versions(grace_s bigint)
      RETURNS TABLE (organisation_id uuid, subscription_id text, tier text, plan_version integer, period_start bigint, seats integer,
                     billing_interval text)
      LANGUAGE sql STABLE AS $$
        SELECT o.organisation_id, o.subscription_id, o.tier, s.plan_version, o.period_start, o.seats, s.interval
        FROM subscriptions.of_every_organisation(grace_s) o
        JOIN provider_subscriptions s ON s.subscription_id = o.subscription_id
        WHERE o.live AND o.not_candidate IS NULL
      $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION subscriptions.live_on_versions(bigint)`);
    await queryRunner.query(`DROP FUNCTION subscriptions.plan_versions()`);
  }
}
