import { Column, Entity, PrimaryColumn } from 'typeorm';

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
