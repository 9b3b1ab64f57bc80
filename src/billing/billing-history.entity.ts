import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * One paid invoice. Written by the WebhookModule (invoice.payment_succeeded), listed by the BillingModule;
 * it lives here, outside both modules' providers, so neither module imports the other.
 */
@Entity('billing_history')
@Index('billing_history_org_paid_idx', ['organisationId', 'paidAt', 'id'])
@Unique('billing_history_invoice_id_key', ['invoiceId'])
export class BillingHistoryEntry {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'billing_history_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'billing_history_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  /** The provider's invoice id: unique, so a redelivered invoice is recorded once. */
  @Column('text', { name: 'invoice_id' })
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
