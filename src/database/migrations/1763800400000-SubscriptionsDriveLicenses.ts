import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every subscription an organisation has is kept with its own state and event order, and the license is
 * derived from the best live one at read time (spec §5), so the `licenses` table goes: each license's
 * current subscription takes its state over first. A subscription that was past_due gets `past_due_since`
 * = its period end (what grace was counted from until now), or now when that lies ahead.
 *
 * The ledger keeps the event as received (text): PostgreSQL's jsonb refuses `\u0000` and lone surrogates,
 * which a correctly signed event may carry, and such an event must still be stored.
 */
export class SubscriptionsDriveLicenses1763800400000 implements MigrationInterface {
  name = 'SubscriptionsDriveLicenses1763800400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE provider_subscriptions
        ADD COLUMN tier text,
        ADD COLUMN status text,
        ADD COLUMN current_period_start bigint,
        ADD COLUMN current_period_end bigint,
        ADD COLUMN past_due_since bigint,
        ADD COLUMN last_event_created bigint,
        ADD COLUMN last_event_rank smallint,
        ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`);
    await q.query(`
      UPDATE provider_subscriptions s
      SET tier = l.tier, status = l.subscription_status,
          current_period_start = l.current_period_start, current_period_end = l.current_period_end,
          past_due_since = CASE WHEN l.subscription_status = 'past_due'
                                THEN LEAST(l.current_period_end, extract(epoch FROM now())::bigint) END,
          last_event_created = l.last_event_created, last_event_rank = l.last_event_rank
      FROM licenses l
      WHERE l.subscription_id = s.subscription_id AND s.deleted_event_created IS NULL`);
    await q.query(`DROP TABLE licenses`);
    await q.query(`ALTER TABLE webhook_events ALTER COLUMN payload TYPE text USING payload::text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_events ALTER COLUMN payload TYPE jsonb USING payload::jsonb`);
    await q.query(`
      CREATE TABLE licenses (
        organisation_id uuid PRIMARY KEY REFERENCES organisations(id) ON DELETE CASCADE,
        tier text NOT NULL DEFAULT 'free',
        subscription_id text,
        subscription_status text,
        current_period_start bigint,
        current_period_end bigint,
        last_event_created bigint,
        last_event_rank smallint,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX licenses_subscription_idx ON licenses (subscription_id)`);
    await q.query(`
      INSERT INTO licenses (organisation_id, tier, subscription_id, subscription_status, current_period_start,
                            current_period_end, last_event_created, last_event_rank)
      SELECT DISTINCT ON (organisation_id) organisation_id, tier, subscription_id, status, current_period_start,
             current_period_end, last_event_created, last_event_rank
      FROM provider_subscriptions WHERE deleted_event_created IS NULL AND tier IS NOT NULL
      ORDER BY organisation_id, last_event_created DESC NULLS LAST`);
    await q.query(`
      ALTER TABLE provider_subscriptions
        DROP COLUMN tier, DROP COLUMN status, DROP COLUMN current_period_start, DROP COLUMN current_period_end,
        DROP COLUMN past_due_since, DROP COLUMN last_event_created, DROP COLUMN last_event_rank,
        DROP COLUMN updated_at`);
  }
}
