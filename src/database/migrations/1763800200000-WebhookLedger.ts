import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The webhook event ledger, and the provider subscriptions the webhook has linked to an organisation
 * (including deleted ones, so a deleted subscription never comes back to life).
 */
export class WebhookLedger1763800200000 implements MigrationInterface {
  name = 'WebhookLedger1763800200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_events (
        id text PRIMARY KEY,
        type text NOT NULL,
        created bigint NOT NULL,
        livemode boolean NOT NULL DEFAULT false,
        payload jsonb NOT NULL,
        status text NOT NULL
          CHECK (status IN ('processed', 'duplicate', 'stale', 'unmatched', 'ignored', 'failed')),
        reason text,
        organisation_id uuid REFERENCES organisations(id) ON DELETE SET NULL,
        customer_id text,
        subscription_id text,
        attempts integer NOT NULL DEFAULT 1,
        received_at timestamptz NOT NULL DEFAULT now(),
        last_received_at timestamptz NOT NULL DEFAULT now(),
        processed_at timestamptz
      )`);
    await q.query(`CREATE INDEX webhook_events_status_idx ON webhook_events (status, received_at DESC)`);
    await q.query(`CREATE INDEX webhook_events_received_idx ON webhook_events (received_at DESC)`);
    // Unmatched events are looked up again when a later event links their customer or subscription.
    await q.query(
      `CREATE INDEX webhook_events_unmatched_customer_idx ON webhook_events (customer_id) WHERE status = 'unmatched'`,
    );
    await q.query(
      `CREATE INDEX webhook_events_unmatched_subscription_idx ON webhook_events (subscription_id) WHERE status = 'unmatched'`,
    );
    await q.query(`
      CREATE TABLE provider_subscriptions (
        subscription_id text PRIMARY KEY,
        organisation_id uuid NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        customer_id text,
        deleted_event_created bigint,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX provider_subscriptions_org_idx ON provider_subscriptions (organisation_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE provider_subscriptions`);
    await q.query(`DROP TABLE webhook_events`);
  }
}
