import { AppException } from '../common/app-exception';
import { FREE_TIER, isPaidTier, paidTiers, TierTable } from '../config/tiers';

/** What a subscription sells: a tier, at an interval, for a number of seats (1 when the tier is not per seat). */
export interface Plan {
  tier: string;
  interval: string;
  seats: number;
}

/** What a change asks for; what it leaves out stays as it is (spec §11.4). */
export interface PlanRequest {
  tier?: string;
  interval?: string;
  seats?: number;
}

/**
 * What a request gets wrong whatever the organisation has (400, checked before its state): a tier that is not
 * a paid one (`free` is a cancellation), seats for a tier not sold per seat or beyond its `max`.
 */
export function checkRequest(tiers: TierTable, ask: PlanRequest): void {
  if (ask.tier === undefined) return;
  if (ask.tier === FREE_TIER) {
    throw new AppException('invalid_tier', 'free is not a plan to change to: cancel the subscription instead (POST /api/billing/subscription/cancel).');
  }
  if (!isPaidTier(tiers, ask.tier)) throw new AppException('invalid_tier', `tier must be one of ${paidTiers(tiers).join(', ')}.`);
  if (ask.seats === undefined) return;
  const plan = tiers[ask.tier];
  if (!plan.perSeat) throw new AppException('validation_failed', `seats: the tier ${ask.tier} is not sold per seat.`);
  if (ask.seats > plan.metrics.users.limit) throw new AppException('validation_failed', `seats: the tier ${ask.tier} sells at most ${plan.metrics.users.limit} seats.`);
}

/**
 * The plan a change asks for, from the current one: the tier (a paid one: `free` is a cancellation), the
 * interval (default the current one) and the seats (a per-seat tier only, from 1 to its `max`; default the
 * current seats when the current tier is per seat, else the member count, at least 1). Answers 400 for what
 * the request itself gets wrong; `members` is checked by the caller (409 comes after every 400).
 */
export function targetPlan(tiers: TierTable, current: Plan & { perSeat: boolean }, ask: PlanRequest, members: number): Plan {
  const tier = ask.tier ?? current.tier;
  checkRequest(tiers, { ...ask, tier });
  const interval = ask.interval ?? current.interval;
  if (!tiers[tier].perSeat) return { tier, interval, seats: 1 };
  return { tier, interval, seats: ask.seats ?? (current.perSeat ? current.seats : Math.max(1, members)) };
}

// Interval lengths, to compare them (monthly to yearly is an upgrade).
const INTERVAL_DAYS: Record<string, number> = { day: 1, week: 7, month: 30, year: 365 };

/**
 * An upgrade has a part that sells more (a later tier of the table, more seats of the same per-seat tier, a
 * longer interval) and takes effect now; a change with none is a downgrade, at the period's end. A change
 * with both parts (a later tier with fewer seats) is an upgrade.
 */
export function isUpgrade(tiers: TierTable, from: Plan, to: Plan): boolean {
  const order = Object.keys(tiers);
  const seatsUp = from.tier === to.tier && to.seats > from.seats;
  return order.indexOf(to.tier) > order.indexOf(from.tier) || seatsUp || (INTERVAL_DAYS[to.interval] ?? 0) > (INTERVAL_DAYS[from.interval] ?? 0);
}

/** The users limit a plan puts in force: its seats, at most the tier's `max`, for a per-seat tier; else the tier's own. */
export function usersLimit(tiers: TierTable, plan: Pick<Plan, 'tier' | 'seats'>): number {
  const max = tiers[plan.tier].metrics.users.limit;
  return tiers[plan.tier].perSeat ? Math.min(plan.seats, max) : max;
}

export const samePlan = (a: Plan, b: Plan) => a.tier === b.tier && a.interval === b.interval && a.seats === b.seats;
