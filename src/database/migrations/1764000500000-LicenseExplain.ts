import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * For GET /api/licensing/explain (spec §12): how each subscription's tier was resolved (configured price,
 * price metadata, lookup key or subscription metadata), stored when an event or a correction sets the tier
 * (rows from before stay null: their source was not recorded); and an index to read one subscription's
 * events newest first.
 */
export class LicenseExplain1764000500000 implements MigrationInterface {
  name = 'LicenseExplain1764000500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE provider_subscriptions ADD COLUMN tier_source text`);
    await q.query(`
      ALTER TABLE provider_subscriptions ADD CONSTRAINT provider_subscriptions_tier_source_check
        CHECK (tier_source IN ('configured_price', 'price_metadata', 'lookup_key', 'subscription_metadata'))`);
    await q.query(`CREATE INDEX webhook_events_subscription_idx ON webhook_events (subscription_id, created)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_events_subscription_idx`);
    await q.query(`ALTER TABLE provider_subscriptions DROP CONSTRAINT provider_subscriptions_tier_source_check`);
    await q.query(`ALTER TABLE provider_subscriptions DROP COLUMN tier_source`);
  }
}
