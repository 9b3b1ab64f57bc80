import { ProviderEvent } from './provider-event';

/**
 * The payment-provider port. Controllers and services depend on this abstract class (it is also the DI
 * token); one adapter wraps the provider's official SDK, another is the built-in sandbox. No SDK type
 * crosses this boundary.
 */

export interface CheckoutSessionInfo {
  id: string;
  /** paid | unpaid | no_payment_required */
  paymentStatus: string;
  /** open | complete | expired */
  status: string | null;
  amountTotal: number | null;
  /** As the provider sends it (usually lower case). */
  currency: string | null;
  /** Unix seconds. */
  created: number;
  metadata: Record<string, string>;
  clientReferenceId: string | null;
  customerId: string | null;
  subscriptionId: string | null;
}

/** A price as the provider has it (`GET /v1/prices/{id}`): what the plan list shows. */
export interface PriceInfo {
  id: string;
  active: boolean;
  /** Integer minor units, per unit (per seat); null for a price without a fixed amount (tiered, custom). */
  unitAmount: number | null;
  /** As the provider sends it (lower case). */
  currency: string;
  /** null for a one-time price. */
  recurring: { interval: string; intervalCount: number } | null;
  /**
   * The price's amount in each currency it is sold in (its `currency_options`, lower-case keys, its own currency
   * among them): integer minor units per unit, null where that currency has no fixed amount (tiered, custom).
   */
  currencyOptions: Record<string, number | null>;
}

export interface CreateCheckoutInput {
  organisationId: string;
  tier: string;
  /** The provider price sold for the tier (PAYPROVIDER_PRICE_<TIER>); the sandbox needs none. */
  priceId?: string;
  /** The organisation's existing customer record, if any. */
  customerId?: string;
  successUrl: string;
  cancelUrl: string;
  /** The line item's quantity: the seats of a per-seat tier, else 1. */
  quantity: number;
  /** Days of trial (`subscription_data[trial_period_days]`); 0: none. */
  trialDays: number;
  /** A trial without a card: `payment_method_collection=if_required`, cancelled at its end without one. */
  trialWithoutPaymentMethod: boolean;
  allowPromotionCodes: boolean;
  /** Automatic tax and tax id collection (and the existing customer's address and name kept up to date). */
  automaticTax: boolean;
  /**
   * The session's currency (lower case), one of the price's `currencyOptions`; absent: the price's own. A price
   * without it is refused (PaymentProviderError 'rejected', param `currency`).
   */
  currency?: string;
}

/**
 * A checkout of credit packs (spec §16.3): mode payment, the pack's one-time price × quantity, for the
 * organisation's customer, with an invoice for the buyer.
 */
export interface PackCheckoutInput {
  organisationId: string;
  pack: string;
  /** The provider price sold for the pack (PAYPROVIDER_PRICE_PACK_<PACK>); the sandbox needs none. */
  priceId?: string;
  quantity: number;
  /** The session's currency (lower case): one of the price's currency options; none: the price's own. */
  currency?: string;
  customerId: string;
  /** On the session and on its invoice: what the paid session's grant is made from. */
  metadata: Record<string, string>;
  successUrl: string;
  cancelUrl: string;
  allowPromotionCodes: boolean;
  automaticTax: boolean;
}

/** A customer as the provider has it: whether it can be charged off-session (spec §16.4). */
export interface CustomerInfo {
  id: string;
  /** `invoice_settings.default_payment_method` (else the legacy `default_source`): what an invoice is paid with. */
  defaultPaymentMethod: string | null;
}

/** An automatic top-up's purchase (spec §16.4): one pack, off-session, with the customer's default payment method. */
export interface RechargeChargeInput {
  /** The recharge's id: every request's Idempotency-Key is derived from it (`recharge_<id>_<step>`). */
  rechargeId: string;
  customerId: string;
  pack: string;
  /** The provider price of the pack (PAYPROVIDER_PRICE_PACK_<PACK>); the sandbox needs none. */
  priceId?: string;
  /** On the invoice: `{organisation_id, pack, purpose: "auto_recharge", recharge_id}`. */
  metadata: Record<string, string>;
}

/** How the charge ended: the invoice, paid (its `invoice.paid` grants the pack), or its payment declined. */
export type RechargeCharge = { invoiceId: string; paid: true } | { invoiceId: string; paid: false; error: string };

/** One item of a subscription: a price of the provider's and how many of it (seats). */
export interface PlanItem {
  price: string;
  quantity: number;
}

/** A change of a subscription's one item (`itemId`, the subscription item's id) to another price or quantity. */
export interface ItemChange {
  itemId: string;
  item: PlanItem;
  /** Unix seconds: prorate as of then (the one a preview answered), so the charge is the one shown. */
  prorationDate?: number;
}

/** An invoice as the provider previews it (`POST /v1/invoices/create_preview`): its amounts, never ours. */
export interface InvoicePreview {
  /** Integer minor units. */
  amountDue: number;
  /** As the provider sends it (lower case). */
  currency: string;
  lines: { description: string | null; amount: number; periodStart: number; periodEnd: number }[];
}

/** One billing meter event (spec §13): a window's usage of one metric, for one customer. */
export interface MeterEventInput {
  /** The meter's event name (PAYPROVIDER_METER_<METRIC>). */
  eventName: string;
  customerId: string;
  /** A positive whole number, in the metric's units. */
  value: number;
  /** Unique per window (`<organisation id>:<metric>:<window start>`): the provider keeps one event per identifier. */
  identifier: string;
  /** Unix seconds: the provider takes the past 35 days up to 5 minutes ahead. */
  timestamp: number;
}

export type PaymentProviderErrorKind =
  /** The provider does not know the object (HTTP 404 from the provider). */
  | 'not_found'
  /** The provider rejected our request (other 4xx): a bug or a misconfiguration on our side. */
  | 'rejected'
  /** Unreachable, timed out, or 5xx after retries. */
  | 'unavailable'
  /** The request budget is spent: the provider's 429 after retries, or no slot within PAYPROVIDER_MAX_RPS in time. */
  | 'rate_limited'
  /** A payment the request needed failed (the provider's `card_error`): the customer can pay another way. */
  | 'payment_failed'
  /** The customer's address gives no tax location (`customer_tax_location_invalid`): the customer can fix it. */
  | 'tax_location_invalid';

export class PaymentProviderError extends Error {
  constructor(
    readonly kind: PaymentProviderErrorKind,
    message: string,
    /** The request parameter the provider blamed (e.g. `customer` for a customer it does not know). */
    readonly param?: string,
    /** For 'rate_limited': when a retry may get through. */
    readonly retryAfterS?: number,
    /**
     * The request may have reached the provider and may still be carried out (it timed out, or the provider
     * was still working on its idempotency key): its outcome is unknown, not a failure. Asked again with the same
     * idempotency key, the provider answers what it did.
     */
    readonly outcomeUnknown = false,
  ) {
    super(message);
  }
}

/**
 * The longest checkout session id the provider takes in `GET /v1/checkout/sessions/{session}` (its API
 * description's maxLength for that path; its own ids, `cs_test_` or `cs_live_` and 58 more, are that long).
 */
export const CHECKOUT_SESSION_ID_MAX_LENGTH = 66;

export abstract class PaymentProvider {
  /** Human-readable name for logs: "stripe" or "sandbox". */
  abstract readonly name: string;

  /**
   * True when a checkout needs the tier's configured price id (PAYPROVIDER_PRICE_<TIER>): a real provider
   * sells prices, not tiers. The sandbox invents its own prices and says false.
   */
  abstract readonly requiresPriceIds: boolean;

  /** Throws PaymentProviderError('not_found') for an id the provider does not know. */
  abstract retrievePrice(priceId: string): Promise<PriceInfo>;

  /**
   * The price ids the plan list shows for a paid tier: PAYPROVIDER_PRICE_<TIER> for the real provider; the
   * sandbox's own monthly and yearly prices for the sandbox.
   */
  abstract tierPriceIds(tier: string): string[];

  /**
   * Throws PaymentProviderError('not_found') for an id the provider does not know. Ids longer than
   * CHECKOUT_SESSION_ID_MAX_LENGTH are none of its own: callers answer them without asking.
   */
  abstract retrieveCheckoutSession(sessionId: string): Promise<CheckoutSessionInfo>;

  abstract createCheckoutSession(input: CreateCheckoutInput): Promise<{ id: string; url: string }>;

  /**
   * The price ids of a credit pack: PAYPROVIDER_PRICE_PACK_<PACK> for the real provider (the first is sold); the
   * sandbox's own one-time price for the sandbox.
   */
  abstract packPriceIds(pack: string): string[];

  /** Throws PaymentProviderError('not_found', …, 'customer') for a customer the provider does not know. */
  abstract createPackCheckoutSession(input: PackCheckoutInput): Promise<{ id: string; url: string }>;

  /**
   * A new customer for the organisation (`metadata.organisation_id`), for a purchase that needs one before the
   * provider would make it (a pack checkout, spec §16.3).
   */
  abstract createCustomer(organisationId: string): Promise<{ id: string }>;

  /** Throws PaymentProviderError('not_found') for a customer the provider does not know or deleted. */
  abstract retrieveCustomer(customerId: string): Promise<CustomerInfo>;

  /**
   * Buys one pack off-session (spec §16.4): a draft invoice (the metadata, `auto_advance` false, no other pending
   * item), the pack's price as its item, finalized, then paid with the customer's default payment method. Each
   * request's Idempotency-Key is `recharge_<rechargeId>_<step>`: called again for the same recharge (a retry, a
   * restart, another instance) the provider answers what it did, so the customer is charged once. A declined
   * payment answers `paid: false` with the provider's message; any other failure throws PaymentProviderError.
   */
  abstract chargeRecharge(input: RechargeChargeInput): Promise<RechargeCharge>;

  /**
   * Expires an open checkout session, so it can no longer be paid. Throws PaymentProviderError('not_found') for
   * an unknown id and ('rejected') for a session that is no longer open (completed or already expired).
   */
  abstract expireCheckoutSession(sessionId: string): Promise<void>;

  /** Throws PaymentProviderError('not_found') for a customer the provider does not know. */
  abstract createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }>;

  /**
   * The subscription as the provider has it now, in the provider's own JSON shape (what a
   * `customer.subscription.*` event carries as `data.object`). Throws PaymentProviderError('not_found')
   * for an id it does not know.
   */
  abstract retrieveSubscription(subscriptionId: string): Promise<Record<string, any>>;

  /**
   * One page (`PROVIDER_PAGE_SIZE`, newest first, as the provider lists) of the events of these types created
   * at or after `createdGte` (Unix seconds) that it still keeps (30 days), after the event `startingAfter`.
   */
  abstract listEvents(query: { types: readonly string[]; createdGte: number; startingAfter?: string }): Promise<ProviderPage<ProviderEvent>>;

  /**
   * One page of the account's subscriptions in every status, canceled ones too (the provider's list leaves
   * those out unless asked), newest first, after the subscription `startingAfter`; in the shape of
   * `retrieveSubscription`, but with each one's `schedule` expanded: the schedule object (the shape of
   * `retrieveSchedule`), or null when it has none. The reconciliation compares pending changes at no extra request.
   */
  abstract listSubscriptions(query: { startingAfter?: string }): Promise<ProviderPage<Record<string, any>>>;

  /**
   * The invoice a change of the subscription's item would make: `when: 'now'` the one invoiced at once,
   * prorated as of `prorationDate` (the provider's now when absent); `'period_end'` the next one, without
   * proration. Changes nothing.
   */
  abstract previewItemChange(subscriptionId: string, change: ItemChange & { when: 'now' | 'period_end' }): Promise<InvoicePreview>;

  /**
   * Changes the subscription's item now, prorated and invoiced at once; a payment that fails leaves the
   * subscription as it was, with a `pending_update`. Answers the subscription as the provider has it after
   * the request (the shape of `retrieveSubscription`).
   *
   * The changes below take an `idempotencyKey`: asked again with the same key and the same values, the provider
   * answers what it did the first time (and does it, when the first request never reached it), so a change
   * whose outcome was unknown (PaymentProviderError.outcomeUnknown) can learn it.
   */
  abstract changeItemNow(subscriptionId: string, change: ItemChange, idempotencyKey?: string): Promise<Record<string, any>>;

  /**
   * Moves the subscription's item (`itemId`) to another price now, keeping its quantity, without proration
   * (`proration_behavior=none`): the new price is charged from the next invoice on (a plan migration, spec §17).
   * Answers the subscription as the provider has it after the request.
   */
  abstract changeItemPrice(subscriptionId: string, change: { itemId: string; price: string }, idempotencyKey?: string): Promise<Record<string, any>>;

  /**
   * Puts `next` in force when the current period ends, through a subscription schedule: the subscription's
   * (`scheduleId`, when it has one) or one made from it; its current phase is kept, the next one holds `next`,
   * and the schedule releases the subscription after it. Answers the schedule as the provider has it (what a
   * `subscription_schedule.*` event carries as `data.object`).
   */
  abstract scheduleItemChange(
    subscriptionId: string,
    change: { scheduleId: string | null; next: PlanItem },
    idempotencyKey?: string,
  ): Promise<Record<string, any>>;

  /**
   * The subscription schedule as the provider has it now (what a `subscription_schedule.*` event carries as
   * `data.object`). Throws PaymentProviderError('not_found') for an id it does not know.
   */
  abstract retrieveSchedule(scheduleId: string): Promise<Record<string, any>>;

  /** Releases a schedule: the subscription stays as it is now. Answers the released schedule. */
  abstract releaseSchedule(scheduleId: string, idempotencyKey?: string): Promise<Record<string, any>>;

  /** Sets or clears `cancel_at_period_end`; answers the subscription as the provider has it after. */
  abstract setCancelAtPeriodEnd(subscriptionId: string, cancel: boolean, idempotencyKey?: string): Promise<Record<string, any>>;

  /**
   * Reports usage to the provider's billing meter. 'duplicate': the provider already has an event with this
   * identifier (an earlier attempt reached it), so it is delivered. Throws PaymentProviderError: 'rate_limited'
   * and 'unavailable' may go through later (with `retryAfterS` when the provider said when); 'rejected' and
   * 'not_found' will not.
   */
  abstract reportMeterEvent(event: MeterEventInput): Promise<'created' | 'duplicate'>;
}

/** The provider's largest page: a list costs one request per this many objects. */
export const PROVIDER_PAGE_SIZE = 100;

/** A page of one of the provider's lists; `hasMore`: ask again after its last object. */
export interface ProviderPage<T> {
  data: T[];
  hasMore: boolean;
}
