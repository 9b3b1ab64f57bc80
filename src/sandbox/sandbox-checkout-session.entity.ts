import { Check, Column, Entity, PrimaryColumn } from 'typeorm';
import type { SandboxInterval } from './provider-events';

/**
 * A sandbox checkout session (`cs_…`), served by the sandbox's own checkout page: a subscription to a tier, or
 * (mode payment) credit packs. Unix-second timestamps.
 */
@Entity('sandbox_checkout_sessions')
@Check('sandbox_checkout_sessions_status_check', `status IN ('open', 'complete', 'expired')`)
@Check('sandbox_checkout_sessions_mode_check', `(mode = 'subscription' AND tier IS NOT NULL) OR (mode = 'payment' AND pack IS NOT NULL)`)
@Check('sandbox_checkout_sessions_payment_status_check', `payment_status IN ('unpaid', 'paid', 'no_payment_required')`)
export class SandboxCheckoutSession {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_checkout_sessions_pkey' })
  id: string;

  @Column('text', { default: 'subscription' })
  mode: 'subscription' | 'payment';

  /** The tier a subscription checkout sells; null in mode payment. */
  @Column('text', { nullable: true })
  tier: string | null;

  /** The credit pack a checkout of mode payment sells (`quantity` of it); null for a subscription. */
  @Column('text', { nullable: true })
  pack: string | null;

  /** The price's interval and the line item's quantity, as the checkout asked; the page may change both before paying. */
  @Column('text', { default: 'month' })
  interval: SandboxInterval;

  @Column('integer', { default: 1 })
  quantity: number;

  /** `subscription_data[trial_period_days]`; 0: no trial. */
  @Column('integer', { name: 'trial_days', default: 0 })
  trialDays: number;

  /** `if_required`: a trial may start without a card (and is then canceled at its end); else `always`. */
  @Column('text', { name: 'payment_method_collection', default: 'always' })
  paymentMethodCollection: 'always' | 'if_required';

  /** Integer minor units: what paying charges today (0 for a trial). */
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

  /** The invoice paying made (`invoice_creation` of mode payment; a subscription's first invoice is its own). */
  @Column('text', { name: 'invoice_id', nullable: true })
  invoiceId: string | null;

  @Column('text', { name: 'success_url' })
  successUrl: string;

  @Column('text', { name: 'cancel_url' })
  cancelUrl: string;

  @Column('text', { default: 'open' })
  status: 'open' | 'complete' | 'expired';

  @Column('text', { name: 'payment_status', default: 'unpaid' })
  paymentStatus: 'unpaid' | 'paid' | 'no_payment_required';

  @Column('bigint')
  created: number;

  @Column('bigint', { name: 'expires_at' })
  expiresAt: number;
}
