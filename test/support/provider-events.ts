import { randomBytes } from 'node:crypto';

/**
 * Builders for payment-provider payloads. The shapes follow the provider's published example objects
 * (`subscription`, `subscription_item`, `price`, `invoice`, `event` of its API mock's fixtures), trimmed of fields the service never reads. `legacy: true` moves fields to where older API
 * versions put them (period on the subscription, `invoice.subscription`, no `parent`).
 */
export const providerId = (prefix: string) => `${prefix}_${randomBytes(10).toString('hex')}`;

const nowS = () => Math.floor(Date.now() / 1000);

export interface SubscriptionOptions {
  id?: string;
  customer?: string;
  organisationId?: string;
  /** Goes to the item's `price.metadata.tier` unless another source is chosen. */
  tier?: string;
  tierSource?: 'price_metadata' | 'lookup_key' | 'subscription_metadata' | 'none';
  lookupKey?: string;
  status?: string;
  periodStart?: number;
  periodEnd?: number;
  legacy?: boolean;
  /** The item's price id (default: a random one no PAYPROVIDER_PRICE_<TIER> lists). */
  price?: string;
  /** The item's quantity (default 1). */
  quantity?: number;
  /** The price's recurring interval (default month). */
  interval?: string;
  cancelAtPeriodEnd?: boolean;
  trialEnd?: number | null;
  /** The attached schedule's id (default null). */
  schedule?: string | null;
  defaultPaymentMethod?: string | null;
}

export function subscriptionObject(o: SubscriptionOptions = {}): Record<string, any> {
  const id = o.id ?? providerId('sub');
  const start = o.periodStart ?? nowS() - 60;
  const end = o.periodEnd ?? start + 30 * 86_400;
  const source = o.tierSource ?? 'price_metadata';
  const tier = o.tier ?? 'pro';
  const metadata: Record<string, string> = {};
  if (o.organisationId) metadata.organisation_id = o.organisationId;
  if (source === 'subscription_metadata') metadata.tier = tier;
  const price = {
    id: o.price ?? providerId('price'),
    object: 'price',
    active: true,
    billing_scheme: 'per_unit',
    created: 1721948530,
    currency: 'usd',
    livemode: false,
    lookup_key: source === 'lookup_key' ? (o.lookupKey ?? `${tier}_monthly`) : (o.lookupKey ?? null),
    metadata: source === 'price_metadata' ? { tier } : {},
    nickname: null,
    product: 'prod_QXg1hqf4jFNsqG',
    recurring: { interval: o.interval ?? 'month', interval_count: 1, meter: null, trial_period_days: null, usage_type: 'licensed' },
    tax_behavior: 'unspecified',
    type: 'recurring',
    unit_amount: 2000,
    unit_amount_decimal: '2000',
  };
  const item: Record<string, any> = {
    id: providerId('si'),
    object: 'subscription_item',
    created: 1721954054,
    metadata: {},
    price,
    quantity: o.quantity ?? 1,
    subscription: id,
  };
  if (!o.legacy) Object.assign(item, { current_period_start: start, current_period_end: end });
  const sub: Record<string, any> = {
    id,
    object: 'subscription',
    application: null,
    billing_cycle_anchor: start,
    cancel_at: null,
    cancel_at_period_end: o.cancelAtPeriodEnd ?? false,
    canceled_at: null,
    collection_method: 'charge_automatically',
    created: start,
    currency: 'usd',
    customer: o.customer ?? providerId('cus'),
    default_payment_method: o.defaultPaymentMethod ?? null,
    items: { object: 'list', data: [item], has_more: false, url: `/v1/subscription_items?subscription=${id}` },
    latest_invoice: null,
    livemode: false,
    metadata,
    schedule: o.schedule ?? null,
    start_date: start,
    status: o.status ?? 'active',
    test_clock: null,
    trial_end: o.trialEnd ?? null,
  };
  if (o.legacy) Object.assign(sub, { current_period_start: start, current_period_end: end });
  return sub;
}

export interface InvoiceOptions {
  id?: string;
  customer?: string;
  subscription?: string;
  organisationId?: string;
  /** Where the organisation id travels: the subscription details (today), the invoice's own metadata, or nowhere. */
  metadataIn?: 'subscription_details' | 'invoice' | 'none';
  amountPaid?: number;
  currency?: string;
  periodStart?: number;
  periodEnd?: number;
  paidAt?: number | null;
  created?: number;
  hostedInvoiceUrl?: string | null;
  legacy?: boolean;
  /** The line's price id (default TEST_PRICE_PRO, which the webhook tests configure as the pro price). */
  price?: string;
}

/** The price id that test apps list in PAYPROVIDER_PRICE_PRO: an invoice line with it is this service's. */
export const TEST_PRICE_PRO = 'price_test_pro';

export function invoiceObject(o: InvoiceOptions = {}): Record<string, any> {
  const id = o.id ?? providerId('in');
  const subscription = o.subscription ?? providerId('sub');
  const start = o.periodStart ?? nowS() - 60;
  const end = o.periodEnd ?? start + 30 * 86_400;
  const created = o.created ?? start;
  const where = o.metadataIn ?? (o.organisationId ? 'subscription_details' : 'none');
  const orgMetadata = o.organisationId ? { organisation_id: o.organisationId } : {};
  const line: Record<string, any> = {
    id: providerId('il'),
    object: 'line_item',
    amount: o.amountPaid ?? 2000,
    currency: o.currency ?? 'usd',
    description: '1 × Pro (at $20.00 / month)',
    invoice: id,
    livemode: false,
    metadata: {},
    period: { start, end },
    quantity: 1,
  };
  const price = o.price ?? TEST_PRICE_PRO;
  if (o.legacy) line.price = { id: price, object: 'price' };
  else line.pricing = { type: 'price_details', price_details: { price, product: 'prod_QXg1hqf4jFNsqG' } };
  line.parent = o.legacy
    ? undefined
    : {
        type: 'subscription_item_details',
        invoice_item_details: null,
        subscription_item_details: { invoice_item: null, proration: false, subscription, subscription_item: providerId('si') },
      };
  if (o.legacy) line.subscription = subscription;
  const invoice: Record<string, any> = {
    id,
    object: 'invoice',
    account_country: 'US',
    amount_due: o.amountPaid ?? 2000,
    amount_paid: o.amountPaid ?? 2000,
    amount_remaining: 0,
    billing_reason: 'subscription_create',
    collection_method: 'charge_automatically',
    created,
    currency: o.currency ?? 'usd',
    customer: o.customer ?? providerId('cus'),
    hosted_invoice_url: o.hostedInvoiceUrl === undefined ? `https://invoice.example.com/i/${id}` : o.hostedInvoiceUrl,
    lines: { object: 'list', data: [line], has_more: false, url: `/v1/invoices/${id}/lines` },
    livemode: false,
    metadata: where === 'invoice' ? orgMetadata : {},
    // The invoice's own period is when pending items were collected, not the period paid for.
    period_end: created,
    period_start: created,
    status: 'paid',
    status_transitions: { finalized_at: created, marked_uncollectible_at: null, paid_at: o.paidAt === undefined ? created + 5 : o.paidAt, voided_at: null },
    total: o.amountPaid ?? 2000,
  };
  if (o.legacy) {
    invoice.subscription = subscription;
  } else {
    invoice.parent = {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { metadata: where === 'subscription_details' ? orgMetadata : null, subscription },
    };
  }
  return invoice;
}

/** The event envelope, as in the fixtures' `event`. */
export function providerEvent(type: string, object: Record<string, any>, o: { id?: string; created?: number } = {}) {
  return {
    id: o.id ?? providerId('evt'),
    object: 'event',
    api_version: '2025-03-31.basil',
    created: o.created ?? nowS(),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export const subscriptionEvent = (
  kind: 'created' | 'updated' | 'deleted',
  sub: Record<string, any>,
  o: { id?: string; created?: number } = {},
) => providerEvent(`customer.subscription.${kind}`, kind === 'deleted' ? { ...sub, status: 'canceled' } : sub, o);

export const invoicePaidEvent = (invoice: Record<string, any>, o: { id?: string; created?: number } = {}) =>
  providerEvent('invoice.payment_succeeded', invoice, o);
