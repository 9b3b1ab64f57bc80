import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation with the provider (spec §9): the ledger records how each event first arrived (`webhook`,
 * or `sync` when the reconciliation found it), and `job_leases` lets one instance at a time run a periodic
 * job (a row with an expiry rather than a session lock: it works through a transaction-mode pooler and
 * frees itself when its holder dies).
 */
export class ProviderSync1763800500000 implements MigrationInterface {
  name = 'ProviderSync1763800500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhook_events ADD COLUMN source text NOT NULL DEFAULT 'webhook'
        CONSTRAINT webhook_events_source_check CHECK (source IN ('webhook', 'sync', 'replay'))`);
    await q.query(`
      CREATE TABLE job_leases (
        name text CONSTRAINT job_leases_pkey PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE job_leases`);
    await q.query(`ALTER TABLE webhook_events DROP COLUMN source`);
  }
}
