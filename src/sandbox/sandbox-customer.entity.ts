import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A customer of the sandbox payment provider (`cus_…`). Written through SandboxRepository. */
@Entity('sandbox_customers')
export class SandboxCustomer {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_customers_pkey' })
  id: string;

  /** Unix seconds. */
  @Column('bigint')
  created: number;

  @Column('jsonb', { default: {} })
  metadata: Record<string, string>;

  /** `invoice_settings.default_payment_method` (`pm_…`): set by paying a checkout with a card, or in the portal. */
  @Column('text', { name: 'default_payment_method', nullable: true })
  defaultPaymentMethod: string | null;

  /** The portal's "decline the next charge": the next invoice paid with the saved card is declined, once. */
  @Column('boolean', { name: 'decline_next_charge', default: false })
  declineNextCharge: boolean;
}
