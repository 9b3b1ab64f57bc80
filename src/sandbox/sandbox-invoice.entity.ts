import { Check, Column, Entity, PrimaryColumn } from 'typeorm';
import type { SandboxInvoiceLine } from './provider-events';

/**
 * A sandbox invoice (`in_…`): a subscription's (paid as it is made), one a pack checkout made, or one made through
 * the API for an automatic top-up (a draft, then finalized `open`, then `paid` unless its payment is declined).
 * Unix-second timestamps; amounts in integer minor units.
 */
@Entity('sandbox_invoices')
@Check('sandbox_invoices_status_check', `status IN ('draft', 'open', 'paid')`)
export class SandboxInvoice {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_invoices_pkey' })
  id: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  /** Null for an invoice of no subscription (a pack, a top-up). */
  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  /** The subscription's tier; null for an invoice of no subscription. */
  @Column('text', { nullable: true })
  tier: string | null;

  /** subscription_create, subscription_cycle (a renewal), subscription_update (a prorated change) or manual. */
  @Column('text', { name: 'billing_reason', default: 'subscription_create' })
  billingReason: string;

  @Column('text', { default: 'paid' })
  status: 'draft' | 'open' | 'paid';

  @Column('jsonb', { default: {} })
  metadata: Record<string, string>;

  /** What it charges, line by line (a credit for unused time is negative); `amountPaid` is their sum, at least 0. */
  @Column('jsonb')
  lines: SandboxInvoiceLine[];

  @Column('bigint', { name: 'amount_paid' })
  amountPaid: number;

  @Column('text')
  currency: string;

  @Column('bigint', { name: 'period_start' })
  periodStart: number;

  @Column('bigint', { name: 'period_end' })
  periodEnd: number;

  @Column('bigint')
  created: number;

  /** Null until it is paid. */
  @Column('bigint', { name: 'paid_at', nullable: true })
  paidAt: number | null;
}
