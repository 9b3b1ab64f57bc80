import { ScheduleObject, scheduleSchema, SubscriptionObject } from '../provider/provider-objects';
import { idOf, isObject, secondsOf } from '../provider/provider-event';
import type { PendingChange } from './provider-subscription.entity';

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

/** Today the period lives on the subscription items; older API versions put it on the subscription. */
export function subscriptionFacts(sub: SubscriptionObject): SubscriptionFacts {
  const item = sub.items?.data[0];
  const quantity = item?.quantity;
  const interval = item?.price?.recurring?.interval;
  return {
    status: sub.status?.slice(0, 64) ?? null,
    periodStart: secondsOf(item?.current_period_start) ?? secondsOf(sub.current_period_start) ?? null,
    periodEnd: secondsOf(item?.current_period_end) ?? secondsOf(sub.current_period_end) ?? null,
    seats: Number.isSafeInteger(quantity) ? quantity! : null,
    interval: interval?.slice(0, 16) ?? null,
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

export function scheduleFacts(schedule: ScheduleObject): ScheduleFacts {
  const phases = schedule.phases ?? [];
  const currentStart = secondsOf(schedule.current_phase?.start_date);
  const at = phases.findIndex((p) => secondsOf(p.start_date) === currentStart);
  const phase = at >= 0 ? phases[at + 1] : undefined;
  const item = phase?.items?.[0];
  const startsAt = secondsOf(phase?.start_date);
  return {
    scheduleId: idOf(schedule.id)!,
    subscriptionId: idOf(schedule.subscription) ?? idOf(schedule.released_subscription) ?? null,
    attached: schedule.status === 'active' || schedule.status === 'not_started',
    next:
      startsAt === undefined
        ? null
        : { priceId: idOf(item?.price) ?? null, quantity: Number.isSafeInteger(item?.quantity) ? item!.quantity! : null, startsAt },
  };
}

/** The tier and interval of a price id, as far as the service knows them (PriceCatalog.planOfPrice). */
export type PlanOfPrice = (priceId: string) => { tier: string; interval: string | null } | undefined;

/** What a schedule holds for its subscription, as stored with the subscription: nulls when none holds it. */
export interface HeldSchedule {
  scheduleId: string | null;
  pendingChange: PendingChange | null;
}

/** What a schedule says it holds for its subscription: its id, whether it still holds it, and the change its next phase makes. */
export interface ScheduleState {
  scheduleId: string;
  attached: boolean;
  pendingChange: PendingChange | null;
}

export function scheduleState(facts: ScheduleFacts, planOfPrice: PlanOfPrice): ScheduleState {
  const { next, attached, scheduleId } = facts;
  if (!attached || !next) return { scheduleId, attached, pendingChange: null };
  const plan = next.priceId ? planOfPrice(next.priceId) : undefined;
  return { scheduleId, attached, pendingChange: { tier: plan?.tier ?? null, interval: plan?.interval ?? null, seats: next.quantity, effective_at: next.startsAt } };
}

/**
 * What a subscription object with its `schedule` expanded (the reconciliation's list) says its schedule holds
 * for it: nothing (`schedule` null, or a schedule that let go of it), else the schedule's id and the change of
 * its next phase (as the schedule events store it). Undefined when the object only names its schedule or does
 * not say: nothing to compare then.
 */
export function heldSchedule(sub: SubscriptionObject, planOfPrice: PlanOfPrice): HeldSchedule | undefined {
  if (!('schedule' in sub)) return undefined;
  if (sub.schedule === null) return { scheduleId: null, pendingChange: null };
  if (!isObject(sub.schedule) || !idOf(sub.schedule.id)) return undefined;
  const schedule = scheduleSchema.safeParse(sub.schedule);
  if (!schedule.success) return undefined;
  const state = scheduleState(scheduleFacts(schedule.data), planOfPrice);
  return state.attached ? { scheduleId: state.scheduleId, pendingChange: state.pendingChange } : { scheduleId: null, pendingChange: null };
}

/** Whether a stored schedule and pending change differ from what the provider says (`now`). */
export function scheduleDrifted(stored: HeldSchedule, now: HeldSchedule): boolean {
  const [a, b] = [stored.pendingChange, now.pendingChange];
  // Field by field: a stored pending change comes back from jsonb with its keys in another order.
  const samePending = a === null || b === null ? a === b : a.tier === b.tier && a.interval === b.interval && a.seats === b.seats && a.effective_at === b.effective_at;
  return stored.scheduleId !== now.scheduleId || !samePending;
}
