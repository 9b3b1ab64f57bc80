import { formatDate } from '../common/display-format';
import { addInterval, InvoiceLine, periodLine, planLabel, SandboxPlan, SubscriptionState, unitAmount } from './provider-events';

/**
 * The sandbox's own money: being the provider in development, it computes what the provider would (the
 * service never does). Proration is by the second, one line per side, each rounded to the minor unit, as the
 * provider shows them: a credit for the unused time of the current plan and a charge for the remaining time
 * of the new one.
 */

export interface SandboxCharge {
  lines: InvoiceLine[];
  /** What is charged: the lines' sum, at least 0 (the provider keeps a credit beyond it on the customer's balance). */
  amountDue: number;
  /** The subscription's period after the change. */
  periodStart: number;
  periodEnd: number;
}

// The provider writes the date of a proration line as `27 Aug 2015`.
const day = (unixSeconds: number) => formatDate(unixSeconds);

export function chargeOf(lines: InvoiceLine[], periodStart: number, periodEnd: number): SandboxCharge {
  return { lines, amountDue: Math.max(0, lines.reduce((sum, line) => sum + line.amount, 0)), periodStart, periodEnd };
}

/**
 * A change now, at `at` (the subscription's clock, within its current period). The same interval keeps the
 * period and prorates both plans over what is left of it; another interval starts a new period at `at`, with
 * a full period of the new plan charged less the unused time of the old one. In a trial nothing is charged
 * (the trial is free whatever the plan) and the trial's period stays.
 */
export function changeNowCharge(sub: SubscriptionState, next: SandboxPlan, at: number): SandboxCharge {
  if (sub.status === 'trialing') return chargeOf([], sub.periodStart, sub.periodEnd);
  const credit = -prorated(sub, sub, at);
  const unused: InvoiceLine = {
    tier: sub.tier,
    interval: sub.interval,
    quantity: sub.quantity,
    description: `Unused time on ${planLabel(sub)} after ${day(at)}`,
    amount: credit === 0 ? 0 : credit, // never -0
    periodStart: at,
    periodEnd: sub.periodEnd,
    proration: true,
  };
  if (next.interval !== sub.interval) {
    const end = addInterval(at, next.interval);
    return chargeOf([unused, periodLine(next, at, end, sub.currency)], at, end);
  }
  const remaining: InvoiceLine = {
    ...next,
    description: `Remaining time on ${planLabel(next)} after ${day(at)}`,
    amount: prorated(sub, next, at),
    periodStart: at,
    periodEnd: sub.periodEnd,
    proration: true,
  };
  return chargeOf([unused, remaining], sub.periodStart, sub.periodEnd);
}

/** The next period's invoice once a change waiting for the period's end has taken effect. */
export function nextPeriodCharge(sub: SubscriptionState, next: SandboxPlan): SandboxCharge {
  const end = addInterval(sub.periodEnd, next.interval);
  return chargeOf([periodLine(next, sub.periodEnd, end, sub.currency)], sub.periodEnd, end);
}

/** `plan`'s price (in the subscription's currency) for the part of its current period after `at`, by the second. */
function prorated(sub: SubscriptionState, plan: SandboxPlan, at: number): number {
  const full = unitAmount(plan.tier, plan.interval, sub.currency) * plan.quantity;
  return Math.round((full * (sub.periodEnd - at)) / (sub.periodEnd - sub.periodStart));
}

/**
 * How the sandbox's portal (configured as a provider's portal usually is) takes a change: now when any part of
 * it is bigger (a later tier in `tierOrder`, more seats of the same tier, monthly to yearly), else at the
 * period's end.
 */
export function portalTakesNow(current: SandboxPlan, next: SandboxPlan, tierOrder: string[]): boolean {
  const later = tierOrder.indexOf(next.tier) > tierOrder.indexOf(current.tier);
  const moreSeats = next.tier === current.tier && next.quantity > current.quantity;
  return later || moreSeats || (current.interval === 'month' && next.interval === 'year');
}
