import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage metering. One counter row per (organisation, metric, period): `projects` is a gauge kept in the
 * row with period_start 0; `ai_tokens` gets a new row per billing period (its start, Unix seconds), so a
 * new period starts at 0 while older periods stay as history.
 */
export class Usage1763800100000 implements MigrationInterface {
  name = 'Usage1763800100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_counters (
        organisation_id uuid NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        metric text NOT NULL CHECK (metric IN ('projects', 'ai_tokens')),
        period_start bigint NOT NULL CHECK (period_start >= 0),
        used bigint NOT NULL DEFAULT 0 CHECK (used >= 0),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organisation_id, metric, period_start)
      )`);
    // The first successful answer to a usage report, per caller-chosen key, kept at least 24 hours.
    await q.query(`
      CREATE TABLE usage_idempotency_keys (
        organisation_id uuid NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        key text NOT NULL,
        metric text NOT NULL,
        amount bigint NOT NULL,
        response jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organisation_id, key)
      )`);
    await q.query(`CREATE INDEX usage_idempotency_keys_age_idx ON usage_idempotency_keys (organisation_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE usage_idempotency_keys`);
    await q.query(`DROP TABLE usage_counters`);
  }
}
