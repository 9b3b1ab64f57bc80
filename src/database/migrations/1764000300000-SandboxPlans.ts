import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sandbox sells plans (spec §11.6): a checkout's interval, seats, trial and payment-method collection;
 * a subscription's interval, quantity, trial, cancel_at_period_end, card, schedule and test clock; invoices
 * with their lines; subscription schedules. Existing rows become what they were: monthly, one seat, paid by card.
 */
export class SandboxPlans1764000300000 implements MigrationInterface {
  name = 'SandboxPlans1764000300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE sandbox_checkout_sessions
        ADD interval text NOT NULL DEFAULT 'month',
        ADD quantity integer NOT NULL DEFAULT '1',
        ADD trial_days integer NOT NULL DEFAULT '0',
        ADD payment_method_collection text NOT NULL DEFAULT 'always',
        DROP CONSTRAINT sandbox_checkout_sessions_payment_status_check,
        ADD CONSTRAINT sandbox_checkout_sessions_payment_status_check CHECK (payment_status IN ('unpaid', 'paid', 'no_payment_required'))`);
    await q.query(`
      ALTER TABLE sandbox_subscriptions
        ADD interval text NOT NULL DEFAULT 'month',
        ADD quantity integer NOT NULL DEFAULT '1',
        ADD trial_start bigint,
        ADD trial_end bigint,
        ADD cancel_at_period_end boolean NOT NULL DEFAULT false,
        ADD default_payment_method text,
        ADD missing_payment_method text NOT NULL DEFAULT 'create_invoice',
        ADD schedule_id text,
        ADD clock_offset bigint NOT NULL DEFAULT '0',
        ADD CONSTRAINT sandbox_subscriptions_quantity_check CHECK (quantity >= 1),
        ADD CONSTRAINT sandbox_subscriptions_interval_check CHECK (interval IN ('month', 'year'))`);
    await q.query(`UPDATE sandbox_subscriptions SET default_payment_method = 'pm_' || substr(md5(id), 1, 24)`);
    await q.query(`
      ALTER TABLE sandbox_invoices
        ADD billing_reason text NOT NULL DEFAULT 'subscription_create',
        ADD lines jsonb`);
    await q.query(`
      UPDATE sandbox_invoices SET lines = jsonb_build_array(jsonb_build_object(
        'tier', tier, 'interval', 'month', 'quantity', 1, 'description', '1 × ' || tier || ' (monthly)',
        'amount', amount_paid, 'periodStart', period_start, 'periodEnd', period_end, 'proration', false))`);
    await q.query(`ALTER TABLE sandbox_invoices ALTER lines SET NOT NULL`);
    await q.query(`
      CREATE TABLE sandbox_subscription_schedules (
        id text NOT NULL, subscription_id text NOT NULL, customer_id text NOT NULL, created bigint NOT NULL,
        current jsonb NOT NULL, next jsonb NOT NULL, phase_start bigint NOT NULL, change_at bigint NOT NULL,
        status text NOT NULL DEFAULT 'active', released_at bigint,
        CONSTRAINT sandbox_subscription_schedules_status_check CHECK (status IN ('active', 'released', 'canceled')),
        CONSTRAINT sandbox_subscription_schedules_pkey PRIMARY KEY (id))`);
    await q.query(`CREATE INDEX sandbox_subscription_schedules_subscription_idx ON sandbox_subscription_schedules (subscription_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sandbox_subscription_schedules`);
    await q.query(`ALTER TABLE sandbox_invoices DROP COLUMN lines, DROP COLUMN billing_reason`);
    await q.query(`
      ALTER TABLE sandbox_subscriptions
        DROP CONSTRAINT sandbox_subscriptions_interval_check, DROP CONSTRAINT sandbox_subscriptions_quantity_check,
        DROP COLUMN clock_offset, DROP COLUMN schedule_id, DROP COLUMN missing_payment_method,
        DROP COLUMN default_payment_method, DROP COLUMN cancel_at_period_end, DROP COLUMN trial_end,
        DROP COLUMN trial_start, DROP COLUMN quantity, DROP COLUMN interval`);
    await q.query(`UPDATE sandbox_checkout_sessions SET payment_status = 'paid' WHERE payment_status = 'no_payment_required'`);
    await q.query(`
      ALTER TABLE sandbox_checkout_sessions
        DROP CONSTRAINT sandbox_checkout_sessions_payment_status_check,
        ADD CONSTRAINT sandbox_checkout_sessions_payment_status_check CHECK (payment_status IN ('unpaid', 'paid')),
        DROP COLUMN payment_method_collection, DROP COLUMN trial_days, DROP COLUMN quantity, DROP COLUMN interval`);
  }
}
