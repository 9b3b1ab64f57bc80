import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { InvoiceLine } from './provider-events';

/** A paid sandbox invoice (`in_…`). Unix-second timestamps; amounts in integer minor units. */
@Entity('sandbox_invoices')
export class SandboxInvoice {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_invoices_pkey' })
  id: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  @Column('text', { name: 'subscription_id' })
  subscriptionId: string;

  @Column('text')
  tier: string;

  /** subscription_create, subscription_cycle (a renewal) or subscription_update (a prorated change). */
  @Column('text', { name: 'billing_reason', default: 'subscription_create' })
  billingReason: string;

  /** What it charges, line by line (a credit for unused time is negative); `amountPaid` is their sum, at least 0. */
  @Column('jsonb')
  lines: InvoiceLine[];

  @Column('bigint', { name: 'amount_paid' })
  amountPaid: number;

  @Column('text')
  currency: string;

  @Column('bigint', { name: 'period_start' })
  periodStart: number;

  @Column('bigint', { name: 'period_end' })
  periodEnd: number;

  @Column('bigint', { name: 'paid_at' })
  paidAt: number;
}
