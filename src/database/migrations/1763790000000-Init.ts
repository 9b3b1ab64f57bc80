import { MigrationInterface, QueryRunner } from 'typeorm';

export class Init1763790000000 implements MigrationInterface {
  name = 'Init1763790000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organisations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        provider_customer_id text UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        email text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE memberships (
        organisation_id uuid NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organisation_id, user_id)
      )`);
    await q.query(`CREATE INDEX memberships_user_idx ON memberships (user_id)`);
    await q.query(`
      CREATE TABLE sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        token_hash bytea NOT NULL UNIQUE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX sessions_user_idx ON sessions (user_id)`);
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
      CREATE TABLE billing_history (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organisation_id uuid NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        invoice_id text NOT NULL UNIQUE,
        subscription_id text,
        amount_paid bigint NOT NULL,
        currency text NOT NULL,
        period_start bigint,
        period_end bigint,
        paid_at bigint NOT NULL,
        hosted_invoice_url text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX billing_history_org_paid_idx ON billing_history (organisation_id, paid_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['billing_history', 'licenses', 'sessions', 'memberships', 'users', 'organisations']) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
