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
}

export type PaymentProviderErrorKind =
  /** The provider does not know the object (HTTP 404 from the provider). */
  | 'not_found'
  /** The provider rejected our request (other 4xx): a bug or a misconfiguration on our side. */
  | 'rejected'
  /** Unreachable, timed out, or 5xx after retries. */
  | 'unavailable'
  /** The request budget is spent: the provider's 429 after retries, or no slot within PAYPROVIDER_MAX_RPS in time. */
  | 'rate_limited';

export class PaymentProviderError extends Error {
  constructor(
    readonly kind: PaymentProviderErrorKind,
    message: string,
    /** The request parameter the provider blamed (e.g. `customer` for a customer it does not know). */
    readonly param?: string,
    /** For 'rate_limited': when a retry may get through. */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

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

  /** Throws PaymentProviderError('not_found') for an id the provider does not know. */
  abstract retrieveCheckoutSession(sessionId: string): Promise<CheckoutSessionInfo>;

  abstract createCheckoutSession(input: CreateCheckoutInput): Promise<{ id: string; url: string }>;

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
   * `retrieveSubscription`.
   */
  abstract listSubscriptions(query: { startingAfter?: string }): Promise<ProviderPage<Record<string, any>>>;
}

/** The provider's largest page: a list costs one request per this many objects. */
export const PROVIDER_PAGE_SIZE = 100;

/** A page of one of the provider's lists; `hasMore`: ask again after its last object. */
export interface ProviderPage<T> {
  data: T[];
  hasMore: boolean;
}
