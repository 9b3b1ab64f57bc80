import type { PendingChange } from './provider-subscription.entity';
import { idOf, isObject, secondsOf } from '../provider/provider-event';

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

/**
 * What a subscription schedule says of its subscription (spec §11.4, 11.5): whether it still holds it (active
 * or not started; a released, canceled or completed schedule changes nothing more), and the phase that follows
 * the current one: the price and quantity it puts in force and when.
 */
export interface ScheduleFacts {
  scheduleId: string;
  subscriptionId: string | null;
  attached: boolean;
  next: { priceId: string | null; quantity: number | null; startsAt: number } | null;
}

export function scheduleFacts(schedule: Record<string, any>): ScheduleFacts {
  const phases: Record<string, any>[] = Array.isArray(schedule.phases) ? schedule.phases : [];
  const currentStart = secondsOf(schedule.current_phase?.start_date);
  const at = phases.findIndex((p) => secondsOf(p.start_date) === currentStart);
  const phase = at >= 0 ? phases[at + 1] : undefined;
  const item = Array.isArray(phase?.items) ? phase.items[0] : undefined;
  const startsAt = secondsOf(phase?.start_date);
  return {
    scheduleId: idOf(schedule.id)!,
    subscriptionId: idOf(schedule.subscription) ?? idOf(schedule.released_subscription) ?? null,
    attached: schedule.status === 'active' || schedule.status === 'not_started',
    next:
      startsAt === undefined
        ? null
        : { priceId: idOf(item?.price) ?? null, quantity: Number.isSafeInteger(item?.quantity) ? item.quantity : null, startsAt },
  };
}

/**
 * What a schedule holds for its subscription, as stored: its id, whether it still holds it, and the change its
 * next phase makes (`planOfPrice`: the tier and interval of a price id, as far as the service knows them).
 */
export function scheduleState(
  facts: ScheduleFacts,
  planOfPrice: (priceId: string) => { tier: string; interval: string | null } | undefined,
): { scheduleId: string; attached: boolean; pendingChange: PendingChange | null } {
  const { next, attached, scheduleId } = facts;
  if (!attached || !next) return { scheduleId, attached, pendingChange: null };
  const plan = next.priceId ? planOfPrice(next.priceId) : undefined;
  return { scheduleId, attached, pendingChange: { tier: plan?.tier ?? null, interval: plan?.interval ?? null, seats: next.quantity, effective_at: next.startsAt } };
}

/** What a schedule holds for its subscription, as stored with the subscription: nulls when none holds it. */
export interface HeldSchedule {
  scheduleId: string | null;
  pendingChange: PendingChange | null;
}

/**
 * What a subscription object with its `schedule` expanded (the reconciliation's list) says its schedule holds
 * for it: nothing (`schedule` null, or a schedule that let go of it), else the schedule's id and the change of
 * its next phase (scheduleState, as the schedule events store it). Undefined when the object only names its
 * schedule or does not say: nothing to compare then.
 */
export function heldSchedule(
  sub: Record<string, any>,
  planOfPrice: (priceId: string) => { tier: string; interval: string | null } | undefined,
): HeldSchedule | undefined {
  if (!('schedule' in sub)) return undefined;
  if (sub.schedule === null) return { scheduleId: null, pendingChange: null };
  if (!isObject(sub.schedule) || !idOf(sub.schedule.id)) return undefined;
  const state = scheduleState(scheduleFacts(sub.schedule), planOfPrice);
  return state.attached ? { scheduleId: state.scheduleId, pendingChange: state.pendingChange } : { scheduleId: null, pendingChange: null };
}
