import { randomBytes } from 'node:crypto';
import { ProviderEvent } from '../provider-event';
import { SIGNATURE_HEADER, signatureHeader } from '../provider-signature';

/**
 * Builders for payment-provider objects and signed events, shaped like the provider's current API (its
 * published example objects for each type). Used by the sandbox provider and by `webhook:trigger`, so
 * that both send exactly what the real provider would.
 */

export const SANDBOX_CURRENCY = 'eur';
/** Monthly sandbox prices in minor units; a tier from a TIERS_FILE that is not listed costs the fallback. */
export const SANDBOX_PRICES: Record<string, number> = { pro: 2900, team: 9900, enterprise: 49900 };
export const SANDBOX_FALLBACK_PRICE = 1900;
const API_VERSION = '2025-10-29.clover';

export function sandboxPrice(tier: string): number {
  return SANDBOX_PRICES[tier] ?? SANDBOX_FALLBACK_PRICE;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `<prefix><n random alphanumerics>`: ids the provider's own patterns accept (cs_ ids must match [A-Za-z0-9_]). */
export function randomId(prefix: string, length = 24): string {
  let out = prefix;
  while (out.length < prefix.length + length) {
    for (const byte of randomBytes(length)) {
      // 248 = 4 × 62: rejecting the rest keeps every character equally likely.
      if (byte < 248 && out.length < prefix.length + length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** One calendar month later, as the provider bills monthly: 31 January → 28 (or 29) February. */
export function addMonth(unixSeconds: number): number {
  const d = new Date(unixSeconds * 1000);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 2, 0)).getUTCDate();
  d.setUTCDate(Math.min(d.getUTCDate(), lastDay));
  d.setUTCMonth(d.getUTCMonth() + 1);
  return Math.floor(d.getTime() / 1000);
}

export interface SubscriptionState {
  id: string;
  customerId: string;
  itemId: string;
  tier: string;
  status: string;
  metadata: Record<string, string>;
  created: number;
  periodStart: number;
  periodEnd: number;
  canceledAt: number | null;
}

export type SandboxInterval = 'month' | 'year';

/**
 * The sandbox's prices of a paid tier: monthly `price_sandbox_<tier>` and yearly `price_sandbox_<tier>_yearly`
 * (10 × monthly). Tier names have no `_`, so the suffix cannot be part of one.
 */
export function sandboxPriceIds(tier: string): string[] {
  return [`price_sandbox_${tier}`, `price_sandbox_${tier}_yearly`];
}

/** The tier and interval of a sandbox price id, or undefined for an id that is not one. */
export function parseSandboxPriceId(id: string): { tier: string; interval: SandboxInterval } | undefined {
  const match = /^price_sandbox_([a-z][a-z0-9-]*?)(_yearly)?$/.exec(id);
  return match ? { tier: match[1], interval: match[2] ? 'year' : 'month' } : undefined;
}

export function priceObject(tier: string, interval: SandboxInterval = 'month') {
  const [monthlyId, yearlyId] = sandboxPriceIds(tier);
  const amount = sandboxPrice(tier) * (interval === 'year' ? 10 : 1);
  return {
    id: interval === 'year' ? yearlyId : monthlyId,
    object: 'price',
    active: true,
    billing_scheme: 'per_unit',
    currency: SANDBOX_CURRENCY,
    livemode: false,
    lookup_key: `${tier}_${interval === 'year' ? 'yearly' : 'monthly'}`,
    metadata: { tier },
    nickname: `Sandbox ${tier}${interval === 'year' ? ' yearly' : ''}`,
    product: `prod_sandbox_${tier}`,
    recurring: { interval, interval_count: 1, meter: null, usage_type: 'licensed' },
    type: 'recurring',
    unit_amount: amount,
    unit_amount_decimal: String(amount),
  };
}

export function subscriptionObject(s: SubscriptionState) {
  return {
    id: s.id,
    object: 'subscription',
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: s.canceledAt,
    collection_method: 'charge_automatically',
    created: s.created,
    currency: SANDBOX_CURRENCY,
    customer: s.customerId,
    ended_at: s.status === 'canceled' ? s.canceledAt : null,
    items: {
      object: 'list',
      data: [
        {
          id: s.itemId,
          object: 'subscription_item',
          created: s.created,
          current_period_start: s.periodStart,
          current_period_end: s.periodEnd,
          metadata: {},
          price: priceObject(s.tier),
          quantity: 1,
          subscription: s.id,
        },
      ],
      has_more: false,
      url: `/v1/subscription_items?subscription=${s.id}`,
    },
    livemode: false,
    metadata: s.metadata,
    start_date: s.created,
    status: s.status,
  };
}

export interface InvoiceState {
  id: string;
  customerId: string;
  subscriptionId: string;
  subscriptionMetadata: Record<string, string>;
  itemId: string;
  tier: string;
  amountPaid: number;
  periodStart: number;
  periodEnd: number;
  paidAt: number;
  hostedInvoiceUrl: string | null;
}

export function invoiceObject(i: InvoiceState) {
  return {
    id: i.id,
    object: 'invoice',
    amount_due: i.amountPaid,
    amount_paid: i.amountPaid,
    amount_remaining: 0,
    billing_reason: 'subscription_create',
    collection_method: 'charge_automatically',
    created: i.paidAt,
    currency: SANDBOX_CURRENCY,
    customer: i.customerId,
    hosted_invoice_url: i.hostedInvoiceUrl,
    lines: {
      object: 'list',
      data: [
        {
          id: `il_${i.id.slice(3)}`,
          object: 'line_item',
          amount: i.amountPaid,
          currency: SANDBOX_CURRENCY,
          description: `1 × Sandbox ${i.tier} (monthly)`,
          invoice: i.id,
          livemode: false,
          metadata: {},
          parent: {
            type: 'subscription_item_details',
            subscription_item_details: { invoice_item: null, proration: false, subscription: i.subscriptionId, subscription_item: i.itemId },
          },
          period: { start: i.periodStart, end: i.periodEnd },
          pricing: { type: 'price_details', price_details: { price: `price_sandbox_${i.tier}`, product: `prod_sandbox_${i.tier}` } },
          quantity: 1,
        },
      ],
      has_more: false,
      url: `/v1/invoices/${i.id}/lines`,
    },
    livemode: false,
    metadata: {},
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { metadata: i.subscriptionMetadata, subscription: i.subscriptionId },
    },
    period_end: i.periodEnd,
    period_start: i.periodStart,
    status: 'paid',
    status_transitions: { finalized_at: i.paidAt, marked_uncollectible_at: null, paid_at: i.paidAt, voided_at: null },
    subtotal: i.amountPaid,
    total: i.amountPaid,
  };
}

export function eventEnvelope(type: string, object: object, created = nowSeconds(), previous?: object): ProviderEvent<object> {
  return {
    id: randomId('evt_'),
    object: 'event',
    api_version: API_VERSION,
    created,
    data: previous ? { object, previous_attributes: previous } : { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export interface DeliveryResult {
  status: number;
  body: string;
}

/** POSTs one event, signed like the provider signs it. Network errors and timeouts throw. */
export async function postSignedEvent(url: string, body: string, secret: string, timeoutMs = 10_000): Promise<DeliveryResult> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      [SIGNATURE_HEADER]: signatureHeader(body, secret),
      'User-Agent': 'billing-sandbox-provider/1.0',
    },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}
