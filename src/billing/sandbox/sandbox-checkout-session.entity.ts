import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/** A sandbox checkout session (`cs_…`), served by the sandbox's own checkout page. Unix-second timestamps. */
@Entity('sandbox_checkout_sessions')
@Check('sandbox_checkout_sessions_status_check', `status IN ('open', 'complete', 'expired')`)
@Check('sandbox_checkout_sessions_payment_status_check', `payment_status IN ('unpaid', 'paid')`)
export class SandboxCheckoutSession {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_checkout_sessions_pkey' })
  id: string;

  @Column('text')
  tier: string;

  /** Integer minor units. */
  @Column('bigint', { name: 'amount_total' })
  amountTotal: number;

  @Column('text')
  currency: string;

  @Column('jsonb')
  metadata: Record<string, string>;

  @Column('text', { name: 'client_reference_id', nullable: true })
  clientReferenceId: string | null;

  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  @Column('text', { name: 'success_url' })
  successUrl: string;

  @Column('text', { name: 'cancel_url' })
  cancelUrl: string;

  @Column('text', { default: 'open' })
  status: 'open' | 'complete' | 'expired';

  @Column('text', { name: 'payment_status', default: 'unpaid' })
  paymentStatus: 'unpaid' | 'paid';

  @Column('bigint')
  created: number;

  @Column('bigint', { name: 'expires_at' })
  expiresAt: number;
}
