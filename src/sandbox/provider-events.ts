import { randomBytes } from 'node:crypto';
import { ProviderEvent } from '../provider/provider-event';
import type { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SIGNATURE_HEADER, signatureHeader } from '../provider/provider-signature';

/**
 * Builders for payment-provider objects and signed events, shaped like the provider's current API (its
 * published example objects for each type). Used by the sandbox provider and by `webhook:trigger`, so
 * that both send exactly what the real provider would.
 */

/** The sandbox's prices are in euros (their own currency), with currency options in US dollars and pounds. */
export const SANDBOX_CURRENCY = 'eur';
export const SANDBOX_CURRENCIES: readonly string[] = ['eur', 'usd', 'gbp'];
/** Each option's amount from the euro one: a rough rate, rounded to whole units, as a price list would be. */
const SANDBOX_RATES: Record<string, number> = { eur: 1, usd: 1.1, gbp: 0.85 };
/** Monthly sandbox prices in minor units; a tier from a TIERS_FILE that is not listed costs the fallback. */
export const SANDBOX_PRICES: Record<string, number> = { pro: 2900, team: 9900, enterprise: 49900 };
export const SANDBOX_FALLBACK_PRICE = 1900;
/** What the sandbox charges for one credit pack, whatever its size, in minor units. */
export const SANDBOX_PACK_PRICE = 1000;
const API_VERSION = '2025-10-29.clover';

export function sandboxPrice(tier: string): number {
  return SANDBOX_PRICES[tier] ?? SANDBOX_FALLBACK_PRICE;
}

/** A euro amount of the sandbox's in one of SANDBOX_CURRENCIES (its currency option's amount). */
export function sandboxAmount(euros: number, currency: string): number {
  const rate = SANDBOX_RATES[currency];
  if (rate === undefined) throw new Error(`the sandbox sells nothing in ${currency}`);
  return currency === SANDBOX_CURRENCY ? euros : Math.round((euros * rate) / 100) * 100;
}

/** A sandbox price's amount in each of SANDBOX_CURRENCIES (its `currency_options`), given its amount in one. */
export function currencyAmounts(amountIn: (currency: string) => number): Record<string, number> {
  return Object.fromEntries(SANDBOX_CURRENCIES.map((c) => [c, amountIn(c)]));
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
  return addMonths(unixSeconds, 1);
}

/** When a trial of `days` days started at `startS` ends (the provider counts whole days of 24 hours). */
export function trialEndOf(startS: number, days: number): number {
  return startS + days * 86_400;
}

/** One billing interval later (a year is twelve calendar months: 29 February → 28 February). */
export function addInterval(unixSeconds: number, interval: SandboxInterval): number {
  return addMonths(unixSeconds, interval === 'year' ? 12 : 1);
}

function addMonths(unixSeconds: number, months: number): number {
  const d = new Date(unixSeconds * 1000);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(d.getUTCDate(), lastDay));
  d.setUTCMonth(d.getUTCMonth() + months);
  return Math.floor(d.getTime() / 1000);
}

export type SandboxInterval = 'month' | 'year';
export const SANDBOX_INTERVALS: readonly SandboxInterval[] = ['month', 'year'];

/** What a subscription's single item sells: a tier's price of one interval, times a quantity (seats). */
export interface SandboxPlan {
  tier: string;
  interval: SandboxInterval;
  quantity: number;
}

export interface SubscriptionState extends SandboxPlan {
  id: string;
  customerId: string;
  itemId: string;
  status: string;
  metadata: Record<string, string>;
  created: number;
  periodStart: number;
  periodEnd: number;
  canceledAt: number | null;
  trialStart: number | null;
  trialEnd: number | null;
  cancelAtPeriodEnd: boolean;
  /** `pm_…` once a card was given (paying at checkout); null for a trial started without one. */
  defaultPaymentMethod: string | null;
  /** What a trial that ends without a payment method does (the checkout's `trial_settings`). */
  missingPaymentMethod: 'cancel' | 'create_invoice';
  /** The subscription schedule holding a change for the period's end (`sub_sched_…`). */
  scheduleId: string | null;
  /** What it is billed in: its checkout's currency (lower case), one of SANDBOX_CURRENCIES. */
  currency: string;
}

/**
 * The sandbox's prices of a paid tier: monthly `price_sandbox_<tier>` and yearly `price_sandbox_<tier>_yearly`
 * (10 × monthly). Tier names have no `_`, so the suffix cannot be part of one.
 */
export function sandboxPriceIds(tier: string): string[] {
  return [`price_sandbox_${tier}`, `price_sandbox_${tier}_yearly`];
}

export function sandboxPriceId(tier: string, interval: SandboxInterval): string {
  return sandboxPriceIds(tier)[interval === 'year' ? 1 : 0];
}

/** The tier and interval of a sandbox price id, or undefined for an id that is not one. */
export function parseSandboxPriceId(id: string): { tier: string; interval: SandboxInterval } | undefined {
  const match = /^price_sandbox_([a-z][a-z0-9-]*?)(_yearly)?$/.exec(id);
  return match ? { tier: match[1], interval: match[2] ? 'year' : 'month' } : undefined;
}

/** The sandbox's one-time price of a credit pack. Pack names have no `-`, tier names no `_`: no id is both. */
export function sandboxPackPriceId(pack: string): string {
  return `price_sandbox_pack_${pack}`;
}

/** The pack of a sandbox pack price id, or undefined for an id that is not one. */
export function parseSandboxPackPriceId(id: string): string | undefined {
  return /^price_sandbox_pack_([a-z][a-z0-9_]*)$/.exec(id)?.[1];
}

export function packPriceObject(pack: string) {
  return {
    id: sandboxPackPriceId(pack),
    object: 'price',
    active: true,
    billing_scheme: 'per_unit',
    currency: SANDBOX_CURRENCY,
    livemode: false,
    lookup_key: `pack_${pack}`,
    metadata: { pack },
    nickname: `Sandbox credit pack ${pack}`,
    product: `prod_sandbox_pack_${pack}`,
    recurring: null,
    tax_behavior: 'unspecified',
    type: 'one_time',
    unit_amount: SANDBOX_PACK_PRICE,
    unit_amount_decimal: String(SANDBOX_PACK_PRICE),
  };
}

/** Per unit (per seat), in minor units of `currency` (its currency option's amount). */
export function unitAmount(tier: string, interval: SandboxInterval, currency = SANDBOX_CURRENCY): number {
  return sandboxAmount(sandboxPrice(tier), currency) * (interval === 'year' ? 10 : 1);
}

export function priceObject(tier: string, interval: SandboxInterval = 'month') {
  const amount = unitAmount(tier, interval);
  return {
    id: sandboxPriceId(tier, interval),
    object: 'price',
    active: true,
    billing_scheme: 'per_unit',
    currency: SANDBOX_CURRENCY,
    livemode: false,
    lookup_key: `${tier}_${interval === 'year' ? 'yearly' : 'monthly'}`,
    metadata: { tier },
    nickname: `Sandbox ${tier}${interval === 'year' ? ' yearly' : ''}`,
    product: `prod_sandbox_${tier}`,
    recurring: { interval, interval_count: 1, meter: null, trial_period_days: null, usage_type: 'licensed' },
    tax_behavior: 'unspecified',
    type: 'recurring',
    unit_amount: amount,
    unit_amount_decimal: String(amount),
  };
}

/** "3 × team (yearly)": how invoice lines and the pages name a plan. */
export function planLabel(plan: SandboxPlan): string {
  return `${plan.quantity} × ${plan.tier} (${plan.interval === 'year' ? 'yearly' : 'monthly'})`;
}

export function subscriptionObject(s: SubscriptionState) {
  return {
    id: s.id,
    object: 'subscription',
    billing_cycle_anchor: s.periodStart,
    cancel_at: s.cancelAtPeriodEnd ? s.periodEnd : null,
    cancel_at_period_end: s.cancelAtPeriodEnd,
    canceled_at: s.canceledAt,
    collection_method: 'charge_automatically',
    created: s.created,
    currency: s.currency,
    customer: s.customerId,
    default_payment_method: s.defaultPaymentMethod,
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
          price: priceObject(s.tier, s.interval),
          quantity: s.quantity,
          subscription: s.id,
        },
      ],
      has_more: false,
      url: `/v1/subscription_items?subscription=${s.id}`,
    },
    livemode: false,
    metadata: s.metadata,
    schedule: s.scheduleId,
    start_date: s.created,
    status: s.status,
    test_clock: null,
    trial_end: s.trialEnd,
    trial_settings: { end_behavior: { missing_payment_method: s.missingPaymentMethod } },
    trial_start: s.trialStart,
  };
}

/** A subscription schedule (`sub_sched_…`) as the sandbox makes them: the current phase, then the change. */
export interface ScheduleState {
  id: string;
  subscriptionId: string;
  customerId: string;
  created: number;
  current: SandboxPlan;
  next: SandboxPlan;
  /** The current phase's start and the change's moment (the current period's end). */
  phaseStart: number;
  changeAt: number;
  /** The change's phase lasts one period of its interval; then the schedule releases the subscription. */
  status: 'active' | 'released' | 'canceled';
  releasedAt: number | null;
}

/** `withNext` false: as just made from the subscription, before its phases were given (its one phase, the current one). */
export function scheduleObject(s: ScheduleState, withNext = true) {
  const phase = (plan: SandboxPlan, start: number, end: number) => ({
    add_invoice_items: [],
    billing_cycle_anchor: null,
    collection_method: null,
    currency: SANDBOX_CURRENCY,
    default_payment_method: null,
    discounts: [],
    end_date: end,
    items: [{ discounts: [], metadata: {}, plan: sandboxPriceId(plan.tier, plan.interval), price: sandboxPriceId(plan.tier, plan.interval), quantity: plan.quantity, tax_rates: [] }],
    metadata: {},
    proration_behavior: 'create_prorations',
    start_date: start,
    trial_end: null,
  });
  const live = s.status === 'active';
  return {
    id: s.id,
    object: 'subscription_schedule',
    canceled_at: s.status === 'canceled' ? s.releasedAt : null,
    completed_at: null,
    created: s.created,
    current_phase: live ? { start_date: s.phaseStart, end_date: s.changeAt } : null,
    customer: s.customerId,
    end_behavior: 'release',
    livemode: false,
    metadata: {},
    phases: withNext
      ? [phase(s.current, s.phaseStart, s.changeAt), phase(s.next, s.changeAt, addInterval(s.changeAt, s.next.interval))]
      : [phase(s.current, s.phaseStart, s.changeAt)],
    released_at: s.status === 'released' ? s.releasedAt : null,
    released_subscription: s.status === 'released' ? s.subscriptionId : null,
    status: s.status,
    subscription: live ? s.subscriptionId : null,
    test_clock: null,
  };
}

/** One line of a sandbox subscription's invoice, in minor units (a credit for unused time is negative). */
export interface InvoiceLine extends SandboxPlan {
  description: string;
  amount: number;
  periodStart: number;
  periodEnd: number;
  proration: boolean;
}

/** A line of credit packs (a pack checkout's invoice, an automatic top-up's), from an invoice item (`ii_…`). */
export interface PackLine {
  pack: string;
  quantity: number;
  invoiceItem: string;
  description: string;
  amount: number;
  periodStart: number;
  periodEnd: number;
}

export type SandboxInvoiceLine = InvoiceLine | PackLine;

export const isPackLine = (line: SandboxInvoiceLine): line is PackLine => 'pack' in line;

/** A pack line: `quantity` packs at the sandbox's pack price in `currency` (its currency option's amount). */
export function packLine(pack: string, quantity: number, at: number, currency = SANDBOX_CURRENCY): PackLine {
  return {
    pack,
    quantity,
    invoiceItem: randomId('ii_'),
    description: `${quantity} × credit pack ${pack}`,
    amount: sandboxAmount(SANDBOX_PACK_PRICE, currency) * quantity,
    periodStart: at,
    periodEnd: at,
  };
}

export interface InvoiceState {
  id: string;
  customerId: string;
  /** Null for an invoice of no subscription (credit packs). */
  subscriptionId: string | null;
  subscriptionMetadata: Record<string, string>;
  itemId: string | null;
  /** subscription_create, subscription_cycle (a renewal), subscription_update (a prorated change), manual. */
  billingReason: string;
  lines: SandboxInvoiceLine[];
  /** What it charges: paid once `status` is paid. */
  amountPaid: number;
  periodStart: number;
  periodEnd: number;
  /** Null until paid. */
  paidAt: number | null;
  hostedInvoiceUrl: string | null;
  /** Default paid (a subscription's invoices are paid as they are made). */
  status?: 'draft' | 'open' | 'paid';
  metadata?: Record<string, string>;
  /** Default `paidAt`. */
  created?: number;
  /** Lower case; default SANDBOX_CURRENCY. */
  currency?: string;
}

/** The full price of one period of `plan` in `currency`, as the invoice line of a checkout or a renewal. */
export function periodLine(plan: SandboxPlan, periodStart: number, periodEnd: number, currency = SANDBOX_CURRENCY): InvoiceLine {
  return {
    ...plan,
    description: planLabel(plan),
    amount: unitAmount(plan.tier, plan.interval, currency) * plan.quantity,
    periodStart,
    periodEnd,
    proration: false,
  };
}

export function invoiceObject(i: InvoiceState) {
  const status = i.status ?? 'paid';
  const paid = status === 'paid';
  const created = i.created ?? i.paidAt!;
  return {
    id: i.id,
    object: 'invoice',
    amount_due: i.amountPaid,
    amount_paid: paid ? i.amountPaid : 0,
    amount_remaining: paid ? 0 : i.amountPaid,
    billing_reason: i.billingReason,
    collection_method: 'charge_automatically',
    created,
    currency: i.currency ?? SANDBOX_CURRENCY,
    customer: i.customerId,
    hosted_invoice_url: i.hostedInvoiceUrl,
    lines: {
      object: 'list',
      data: i.lines.map((line, n) => lineObject(line, `il_${i.id.slice(3)}${n || ''}`, i)),
      has_more: false,
      url: `/v1/invoices/${i.id}/lines`,
    },
    livemode: false,
    metadata: i.metadata ?? {},
    parent: i.subscriptionId
      ? { type: 'subscription_details', quote_details: null, subscription_details: { metadata: i.subscriptionMetadata, subscription: i.subscriptionId } }
      : null,
    period_end: i.periodEnd,
    period_start: i.periodStart,
    status,
    status_transitions: { finalized_at: status === 'draft' ? null : created, marked_uncollectible_at: null, paid_at: i.paidAt, voided_at: null },
    subtotal: i.lines.reduce((sum, line) => sum + line.amount, 0),
    total: i.lines.reduce((sum, line) => sum + line.amount, 0),
  };
}

export function lineObject(line: SandboxInvoiceLine, id: string, i: { id: string | null; subscriptionId: string | null; itemId: string | null; currency?: string }) {
  const currency = i.currency ?? SANDBOX_CURRENCY;
  if (isPackLine(line)) return packLineObject(line, id, i.id, currency);
  return {
    id,
    object: 'line_item',
    amount: line.amount,
    currency,
    description: line.description,
    invoice: i.id,
    livemode: false,
    metadata: {},
    parent: {
      type: 'subscription_item_details',
      subscription_item_details: { invoice_item: null, proration: line.proration, subscription: i.subscriptionId, subscription_item: i.itemId },
    },
    period: { start: line.periodStart, end: line.periodEnd },
    pricing: {
      type: 'price_details',
      price_details: { price: sandboxPriceId(line.tier, line.interval), product: `prod_sandbox_${line.tier}` },
      unit_amount_decimal: String(unitAmount(line.tier, line.interval, currency)),
    },
    quantity: line.quantity,
  };
}

function packLineObject(line: PackLine, id: string, invoiceId: string | null, currency: string) {
  return {
    id,
    object: 'line_item',
    amount: line.amount,
    currency,
    description: line.description,
    invoice: invoiceId,
    livemode: false,
    metadata: {},
    parent: {
      type: 'invoice_item_details',
      invoice_item_details: { invoice_item: line.invoiceItem, proration: false, proration_details: { credited_items: null }, subscription: null },
    },
    period: { start: line.periodStart, end: line.periodEnd },
    pricing: {
      type: 'price_details',
      price_details: { price: sandboxPackPriceId(line.pack), product: `prod_sandbox_pack_${line.pack}` },
      unit_amount_decimal: String(line.amount / line.quantity),
    },
    quantity: line.quantity,
  };
}

/** A checkout session as the provider's API and its `checkout.session.*` events carry it. */
export function checkoutSessionObject(s: SandboxCheckoutSession) {
  return {
    id: s.id,
    object: 'checkout.session',
    amount_subtotal: s.amountTotal,
    amount_total: s.amountTotal,
    cancel_url: s.cancelUrl,
    client_reference_id: s.clientReferenceId,
    created: s.created,
    currency: s.currency,
    customer: s.customerId,
    expires_at: s.expiresAt,
    invoice: s.invoiceId,
    invoice_creation: s.mode === 'payment' ? { enabled: true, invoice_data: { metadata: s.metadata } } : null,
    livemode: false,
    metadata: s.metadata,
    mode: s.mode,
    payment_status: s.paymentStatus,
    status: s.status,
    subscription: s.subscriptionId,
    success_url: s.successUrl,
    // The provider drops the URL of a session that can no longer be paid; an open one's is the sandbox's page (not known here).
    url: null,
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
