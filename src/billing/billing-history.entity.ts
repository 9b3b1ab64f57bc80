import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One paid invoice. Written by the WebhookModule (invoice.payment_succeeded), listed by the BillingModule;
 * it lives here, outside both modules' providers, so neither module imports the other.
 */
@Entity('billing_history')
@Index('billing_history_org_paid_idx', ['organisationId', 'paidAt', 'id'])
export class BillingHistoryEntry {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  organisationId: string;

  @Column('text', { name: 'invoice_id', unique: true })
  invoiceId: string;

  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  /** Integer minor units. */
  @Column('bigint', { name: 'amount_paid' })
  amountPaid: number;

  /** Upper-case ISO code. */
  @Column('text')
  currency: string;

  @Column('bigint', { name: 'period_start', nullable: true })
  periodStart: number | null;

  @Column('bigint', { name: 'period_end', nullable: true })
  periodEnd: number | null;

  @Column('bigint', { name: 'paid_at' })
  paidAt: number;

  @Column('text', { name: 'hosted_invoice_url', nullable: true })
  hostedInvoiceUrl: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
