import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The built-in sandbox payment provider (src/billing/sandbox): its checkout and portal sessions, customers,
 * subscriptions, invoices, and an outbox of the events it delivers to our own webhook. Kept in PostgreSQL so
 * that a paid sandbox checkout survives a restart and any instance can serve its pages.
 */
export class SandboxProvider1763800300000 implements MigrationInterface {
  name = 'SandboxProvider1763800300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sandbox_customers (
        id text PRIMARY KEY,
        created bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE sandbox_checkout_sessions (
        id text PRIMARY KEY,
        tier text NOT NULL,
        amount_total bigint NOT NULL,
        currency text NOT NULL,
        metadata jsonb NOT NULL,
        client_reference_id text,
        customer_id text,
        subscription_id text,
        success_url text NOT NULL,
        cancel_url text NOT NULL,
        status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'complete')),
        payment_status text NOT NULL DEFAULT 'unpaid' CHECK (payment_status IN ('unpaid', 'paid')),
        created bigint NOT NULL,
        expires_at bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE sandbox_subscriptions (
        id text PRIMARY KEY,
        customer_id text NOT NULL REFERENCES sandbox_customers(id),
        item_id text NOT NULL,
        tier text NOT NULL,
        status text NOT NULL,
        metadata jsonb NOT NULL,
        created bigint NOT NULL,
        current_period_start bigint NOT NULL,
        current_period_end bigint NOT NULL,
        canceled_at bigint,
        last_event_created bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX sandbox_subscriptions_customer_idx ON sandbox_subscriptions (customer_id)`);
    await q.query(`
      CREATE TABLE sandbox_invoices (
        id text PRIMARY KEY,
        customer_id text NOT NULL,
        subscription_id text NOT NULL,
        tier text NOT NULL,
        amount_paid bigint NOT NULL,
        currency text NOT NULL,
        period_start bigint NOT NULL,
        period_end bigint NOT NULL,
        paid_at bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE sandbox_portal_sessions (
        id text PRIMARY KEY,
        customer_id text NOT NULL,
        return_url text NOT NULL,
        created bigint NOT NULL,
        expires_at bigint NOT NULL
      )`);
    // Outbox: events are stored with the change that causes them, then delivered in seq order; an
    // undelivered event is retried by the page's "try again" button.
    await q.query(`
      CREATE TABLE sandbox_events (
        seq bigserial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        source_id text NOT NULL,
        type text NOT NULL,
        payload jsonb NOT NULL,
        delivered_at timestamptz,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX sandbox_events_pending_idx ON sandbox_events (source_id, seq) WHERE delivered_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sandbox_events`);
    await q.query(`DROP TABLE sandbox_portal_sessions`);
    await q.query(`DROP TABLE sandbox_invoices`);
    await q.query(`DROP TABLE sandbox_subscriptions`);
    await q.query(`DROP TABLE sandbox_checkout_sessions`);
    await q.query(`DROP TABLE sandbox_customers`);
  }
}
