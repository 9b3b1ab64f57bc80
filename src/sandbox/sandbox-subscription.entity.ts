import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { SandboxInterval } from './provider-events';
import { SandboxCustomer } from './sandbox-customer.entity';

/**
 * A sandbox subscription (`sub_…`) with its single item (a tier's price of one interval × a quantity of seats).
 * Unix-second timestamps, on the subscription's own clock (`clockOffset`).
 */
@Entity('sandbox_subscriptions')
@Check('sandbox_subscriptions_interval_check', `interval IN ('month', 'year')`)
@Check('sandbox_subscriptions_quantity_check', `quantity >= 1`)
@Index('sandbox_subscriptions_customer_idx', ['customerId'])
export class SandboxSubscription {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_subscriptions_pkey' })
  id: string;

  @Column('text', { name: 'customer_id' })
  @ForeignKey(() => SandboxCustomer, { name: 'sandbox_subscriptions_customer_id_fkey', onDelete: 'NO ACTION' })
  customerId: string;

  @Column('text', { name: 'item_id' })
  itemId: string;

  @Column('text')
  tier: string;

  @Column('text', { default: 'month' })
  interval: SandboxInterval;

  /** The item's quantity: seats of a per-seat tier, else 1. */
  @Column('integer', { default: 1 })
  quantity: number;

  /** A provider subscription status: active, canceled, … */
  @Column('text')
  status: string;

  @Column('jsonb')
  metadata: Record<string, string>;

  @Column('bigint')
  created: number;

  @Column('bigint', { name: 'current_period_start' })
  currentPeriodStart: number;

  @Column('bigint', { name: 'current_period_end' })
  currentPeriodEnd: number;

  @Column('bigint', { name: 'canceled_at', nullable: true })
  canceledAt: number | null;

  @Column('bigint', { name: 'trial_start', nullable: true })
  trialStart: number | null;

  @Column('bigint', { name: 'trial_end', nullable: true })
  trialEnd: number | null;

  @Column('boolean', { name: 'cancel_at_period_end', default: false })
  cancelAtPeriodEnd: boolean;

  /** `pm_…` once a card was given at checkout; null for a trial started without one. */
  @Column('text', { name: 'default_payment_method', nullable: true })
  defaultPaymentMethod: string | null;

  /** What its trial does when it ends without a payment method: `cancel` or `create_invoice`. */
  @Column('text', { name: 'missing_payment_method', default: 'create_invoice' })
  missingPaymentMethod: 'cancel' | 'create_invoice';

  /** The active subscription schedule holding a change for the period's end. */
  @Column('text', { name: 'schedule_id', nullable: true })
  scheduleId: string | null;

  /**
   * Seconds its test clock is ahead of real time (`sandbox:advance`): its "now" is real time plus this, and
   * its periods, trial and invoices are on that clock.
   */
  @Column('bigint', { name: 'clock_offset', default: 0 })
  clockOffset: number;

  /** What it is billed in: its checkout's currency (lower case), one of the sandbox's price currencies. */
  @Column('text', { default: 'eur' })
  currency: string;

  /** `created` of the last event emitted for this subscription (real time, strictly increasing). */
  @Column('bigint', { name: 'last_event_created' })
  lastEventCreated: number;
}
