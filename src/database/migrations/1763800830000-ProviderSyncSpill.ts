import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation at scale (spec §9): a run sets aside the events it will apply and the subscriptions it has
 * seen here, so its memory holds one page of the provider's lists, not the whole account.
 */
export class ProviderSyncSpill1763800830000 implements MigrationInterface {
  name = 'ProviderSyncSpill1763800830000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE provider_sync_spill (
        run_id uuid NOT NULL,
        kind text NOT NULL CONSTRAINT provider_sync_spill_kind_check CHECK (kind IN ('event', 'subscription')),
        id text NOT NULL,
        created bigint,
        rank smallint,
        position integer,
        payload text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT provider_sync_spill_pkey PRIMARY KEY (run_id, kind, id)
      )`);
    await q.query(`CREATE INDEX provider_sync_spill_order_idx ON provider_sync_spill (run_id, kind, created, rank, position)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE provider_sync_spill`);
  }
}
