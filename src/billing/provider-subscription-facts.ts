import { idOf, secondsOf } from './provider-event';

/**
 * What a provider subscription object says of itself, besides its tier (spec §5, §11.5): read the same way
 * from a webhook event, a subscription fetched from the provider (a tie, the reconciliation) and the
 * provider's answer to a change.
 */
export interface SubscriptionFacts {
  status: string | null;
  periodStart: number | null;
  periodEnd: number | null;
  /** The item's `quantity`. */
  seats: number | null;
  /** The item's price's recurring interval. */
  interval: string | null;
  cancelAtPeriodEnd: boolean;
  trialEnd: number | null;
  /** The schedule attached to it (null: none); undefined when the object does not say. */
  scheduleId?: string | null;
}

/**
 * Reads the facts of a subscription object whose field types were checked (event-schemas.ts for events).
 * Today the period lives on the subscription items; older API versions put it on the subscription.
 */
export function subscriptionFacts(sub: Record<string, any>): SubscriptionFacts {
  const item = Array.isArray(sub.items?.data) ? sub.items.data[0] : undefined;
  const quantity = item?.quantity;
  const interval = item?.price?.recurring?.interval;
  return {
    status: typeof sub.status === 'string' ? sub.status.slice(0, 64) : null,
    periodStart: secondsOf(item?.current_period_start) ?? secondsOf(sub.current_period_start) ?? null,
    periodEnd: secondsOf(item?.current_period_end) ?? secondsOf(sub.current_period_end) ?? null,
    seats: Number.isSafeInteger(quantity) && quantity >= 0 ? quantity : null,
    interval: typeof interval === 'string' ? interval.slice(0, 16) : null,
    cancelAtPeriodEnd: sub.cancel_at_period_end === true,
    trialEnd: secondsOf(sub.trial_end) ?? null,
    scheduleId: 'schedule' in sub ? (idOf(sub.schedule) ?? null) : undefined,
  };
}
