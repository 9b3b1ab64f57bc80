/**
 * The payment provider's events, as it sends them (see the provider's published example objects) and as
 * the sandbox builds them: the one type for both directions, with the readers for the provider's fields.
 */

/** The event types this service acts on, each named once. */
export const EVENT_TYPES = {
  subscriptionCreated: 'customer.subscription.created',
  subscriptionUpdated: 'customer.subscription.updated',
  subscriptionDeleted: 'customer.subscription.deleted',
  invoicePaymentSucceeded: 'invoice.payment_succeeded',
  invoicePaid: 'invoice.paid',
  customerDeleted: 'customer.deleted',
  subscriptionTrialWillEnd: 'customer.subscription.trial_will_end',
  scheduleUpdated: 'subscription_schedule.updated',
  scheduleReleased: 'subscription_schedule.released',
  scheduleCanceled: 'subscription_schedule.canceled',
  scheduleCompleted: 'subscription_schedule.completed',
  checkoutSessionCompleted: 'checkout.session.completed',
  checkoutSessionAsyncPaymentSucceeded: 'checkout.session.async_payment_succeeded',
} as const;

export type EventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];

/**
 * What became of a received event, as the webhook's ledger records it: applied (`processed`), a redelivery of
 * one already recorded, older than what was applied, someone else's, waiting for its organisation, or not
 * applicable until its cause is fixed. Explain, the console and the CLI show it.
 */
export const LEDGER_STATUSES = ['processed', 'duplicate', 'stale', 'unmatched', 'ignored', 'failed'] as const;
export type LedgerStatus = (typeof LEDGER_STATUSES)[number];

/**
 * A provider event. Received events are only checked for their envelope (see webhook/event-parsing.ts);
 * each handler reads its own `data.object` with the readers below.
 */
export interface ProviderEvent<T extends object = Record<string, any>> {
  id: string;
  object?: 'event';
  api_version?: string;
  type: string;
  /** Unix seconds. */
  created: number;
  livemode: boolean;
  data: { object: T; previous_attributes?: object };
  pending_webhooks?: number;
  request?: { id: string | null; idempotency_key: string | null };
}

export function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An id field that the provider may send as a string or, when expanded, as an object with `id`. */
export function idOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value) return value;
  if (isObject(value) && typeof value.id === 'string' && value.id) return value.id;
  return undefined;
}

/** A Unix-seconds field, or undefined when absent or not an integer. */
export function secondsOf(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;
}
