import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbound notifications to the web app (spec §10): per organisation the license last notified and the
 * version of its last message, the outbox of messages (written in the transaction of the change), and one
 * delivery per message and receiver. The job queue that carries the attempts (graphile-worker's own
 * schema) is installed next to the migrations, under the same lock (see database/migrate.ts).
 */
export class Notifications1763800700000 implements MigrationInterface {
  name = 'Notifications1763800700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notification_states (
        organisation_id uuid CONSTRAINT notification_states_pkey PRIMARY KEY
          CONSTRAINT notification_states_organisation_id_fkey REFERENCES organisations(id) ON DELETE CASCADE,
        version bigint NOT NULL DEFAULT 0,
        tier text NOT NULL DEFAULT 'free',
        is_active boolean NOT NULL DEFAULT true,
        is_expired boolean NOT NULL DEFAULT false,
        checked_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE notification_messages (
        id text CONSTRAINT notification_messages_pkey PRIMARY KEY,
        organisation_id uuid NOT NULL
          CONSTRAINT notification_messages_organisation_id_fkey REFERENCES organisations(id) ON DELETE CASCADE,
        type text NOT NULL CONSTRAINT notification_messages_type_check CHECK (type IN ('license.updated', 'usage.capacity')),
        version bigint NOT NULL,
        body text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX notification_messages_organisation_idx ON notification_messages (organisation_id, version)`);
    await q.query(`CREATE INDEX notification_messages_created_idx ON notification_messages (created_at)`);
    await q.query(`
      CREATE TABLE notification_deliveries (
        id uuid NOT NULL DEFAULT gen_random_uuid() CONSTRAINT notification_deliveries_pkey PRIMARY KEY,
        message_id text NOT NULL
          CONSTRAINT notification_deliveries_message_id_fkey REFERENCES notification_messages(id) ON DELETE CASCADE,
        url text NOT NULL,
        status text NOT NULL DEFAULT 'pending'
          CONSTRAINT notification_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        next_attempt_at timestamptz DEFAULT now(),
        retry_from timestamptz NOT NULL DEFAULT now(),
        delivered_at timestamptz,
        CONSTRAINT notification_deliveries_message_url_key UNIQUE (message_id, url)
      )`);
    await q.query(
      `CREATE INDEX notification_deliveries_pending_idx ON notification_deliveries (next_attempt_at) WHERE status = 'pending'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_deliveries`);
    await q.query(`DROP TABLE notification_messages`);
    await q.query(`DROP TABLE notification_states`);
  }
}
