import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { transaction } from '../database/transaction';
import { PaymentProviderError } from '../provider/payment-provider.port';
import { EVENT_TYPES } from '../provider/provider-event';
import {
  eventEnvelope,
  invoiceObject,
  nowSeconds,
  randomId,
  SandboxPlan,
  ScheduleState,
  scheduleObject,
  subscriptionObject,
  SubscriptionState,
} from './provider-events';
import { changeNowCharge, nextPeriodCharge, SandboxCharge } from './sandbox-billing';
import { SandboxSchedule } from './sandbox-schedule.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';
import { SandboxRepository } from './sandbox.repository';
import { SandboxUrls } from './sandbox-urls';

const DAY_S = 86_400;
/** The provider announces a trial's end this long before it (`customer.subscription.trial_will_end`). */
export const TRIAL_WILL_END_S = 3 * DAY_S;
export const TRIAL_WILL_END = 'customer.subscription.trial_will_end';
const SCHEDULE_EVENT = {
  created: 'subscription_schedule.created',
  updated: 'subscription_schedule.updated',
  released: 'subscription_schedule.released',
  canceled: 'subscription_schedule.canceled',
} as const;

/** A change under way: the locked subscription, its clock, and the events it has stored so far. */
interface Change {
  m: EntityManager;
  sourceId: string;
  sub: SubscriptionState;
  /** The subscription's clock (real time plus its offset). */
  now: number;
  /** Seconds its clock is ahead of real time. */
  offset: number;
  /** `created` of the last event stored (real time, strictly increasing per subscription). */
  lastCreated: number;
}

/** What the clock moved from and to, for the caller's audit entry in the transaction `m` of the move. */
export type ClockRecorder = (m: EntityManager, before: ClockState, after: ClockState) => Promise<void>;
export interface ClockState {
  clock: number;
  status: string;
  current_period_end: number;
}

/** A preview of a change: what the invoice it causes would charge, and from when the change holds. */
export interface SandboxPreview extends SandboxCharge {
  prorationDate: number;
  effectiveAt: number;
  /** The subscription's currency: what the amounts are in. */
  currency: string;
}

/**
 * The sandbox's subscription changes and its test clock, each in one transaction under the subscription's
 * lock, storing the events it causes (outbox, delivered in order by SandboxDelivery under `sourceId`): what the
 * provider does for an update, a schedule, a cancellation, a renewal or a trial's end.
 */
@Injectable()
export class SandboxSubscriptions {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sandbox: SandboxRepository,
    private readonly urls: SandboxUrls,
  ) {}

  /** The subscription as the provider's API returns it; the clock's "now" for it. */
  async find(id: string): Promise<{ object: ReturnType<typeof subscriptionObject>; now: number } | undefined> {
    const row = await this.sandbox.findSubscription(id);
    return row ? { object: subscriptionObject(toState(row)), now: clockOf(row) } : undefined;
  }

  /**
   * What `plan` would cost: now, prorated at `prorationDate` (default: the clock's now), or from the period's end.
   * A `prorationDate` is real time, as the service's clock reads: the subscription's test clock offset is added.
   */
  async preview(id: string, plan: SandboxPlan, when: { atPeriodEnd: boolean; prorationDate?: number }): Promise<SandboxPreview> {
    const row = await this.sandbox.findSubscription(id);
    if (!row) throw notFound(id);
    const sub = toState(row);
    requireLive(sub);
    const { currency } = sub;
    if (when.atPeriodEnd) return { ...nextPeriodCharge(sub, plan), prorationDate: clockOf(row), effectiveAt: sub.periodEnd, currency };
    const at = prorationDateOf(sub, when.prorationDate === undefined ? clockOf(row) : when.prorationDate + row.clockOffset);
    return { ...changeNowCharge(sub, plan, at), prorationDate: at, effectiveAt: at, currency };
  }

  /**
   * An update that holds now, prorated at `prorationDate` (real time, as for `preview`): the proration is invoiced
   * and paid at once. A schedule the subscription has keeps its next phase (as the provider does), which still holds
   * at the period's end. `amountDue`: what the portal showed; when the charge is not that (the subscription changed
   * since), nothing changes (an error with param `amount_due`).
   */
  changeNow(sourceId: string, id: string, plan: SandboxPlan, opts: { prorationDate?: number; customerId?: string; amountDue?: number } = {}) {
    return this.change(sourceId, id, opts.customerId, async (c) => {
      requireLive(c.sub);
      const at = prorationDateOf(c.sub, opts.prorationDate === undefined ? c.now : opts.prorationDate + c.offset);
      const charge = changeNowCharge(c.sub, plan, at);
      if (opts.amountDue !== undefined && charge.amountDue !== opts.amountDue) {
        throw new PaymentProviderError('rejected', 'The amount due is no longer the one shown.', 'amount_due');
      }
      const before = { ...c.sub };
      Object.assign(c.sub, plan, { periodStart: charge.periodStart, periodEnd: charge.periodEnd });
      await this.updated(c, before);
      if (charge.lines.length) await this.invoice(c, 'subscription_update', charge, at);
    });
  }

  /**
   * `plan` from the period's end, through the subscription's schedule: a new one is made from the subscription
   * (`subscription_schedule.created`, its one phase the current one) and then given the change as its next
   * phase (`.updated`), as the provider's two requests do; an active one gets the new next phase (`.updated`).
   */
  schedule(sourceId: string, id: string, plan: SandboxPlan, customerId?: string): Promise<SandboxSchedule> {
    return this.change(sourceId, id, customerId, async (c) => {
      requireLive(c.sub);
      if (c.sub.cancelAtPeriodEnd) {
        throw new PaymentProviderError('rejected', 'The subscription is set to cancel at the end of its period; resume it before scheduling a change.', 'from_subscription');
      }
      if (c.sub.scheduleId) {
        const schedule: SandboxSchedule = { ...(await this.sandbox.findSchedule(c.m, c.sub.scheduleId))!, next: plan };
        await this.sandbox.updateSchedule(c.m, schedule.id, { next: plan });
        await this.emit(c, SCHEDULE_EVENT.updated, scheduleObject(schedule));
        return schedule;
      }
      const { tier, interval, quantity } = c.sub;
      const schedule: SandboxSchedule = {
        id: randomId('sub_sched_'),
        subscriptionId: c.sub.id,
        customerId: c.sub.customerId,
        created: c.now,
        current: { tier, interval, quantity },
        next: plan,
        phaseStart: c.sub.periodStart,
        changeAt: c.sub.periodEnd,
        status: 'active',
        releasedAt: null,
      };
      await this.sandbox.insertSchedule(c.m, schedule);
      const before = { ...c.sub };
      c.sub.scheduleId = schedule.id;
      await this.emit(c, SCHEDULE_EVENT.created, scheduleObject(schedule, false));
      await this.updated(c, before);
      await this.emit(c, SCHEDULE_EVENT.updated, scheduleObject(schedule));
      return schedule;
    }).then((r) => r.result);
  }

  /** Releases an active schedule: the subscription keeps its plan and nothing changes at the period's end. */
  async releaseSchedule(sourceId: string, scheduleId: string, customerId?: string): Promise<ScheduleState> {
    const found = await this.sandbox.findSchedule(this.db.manager, scheduleId);
    if (!found || (customerId && found.customerId !== customerId)) throw new PaymentProviderError('not_found', `No such subscription schedule: '${scheduleId}'`, 'schedule');
    return this.change(sourceId, found.subscriptionId, customerId, async (c) => {
      const schedule = await this.sandbox.findSchedule(c.m, scheduleId);
      if (schedule!.status !== 'active') {
        throw new PaymentProviderError('rejected', `You cannot release a subscription schedule that is currently in the \`${schedule!.status}\` status.`);
      }
      return this.endSchedule(c, schedule!, 'released');
    }).then((r) => r.result);
  }

  /** `cancel_at_period_end`: set, the subscription ends with its period; unset, it renews again. */
  setCancelAtPeriodEnd(sourceId: string, id: string, cancel: boolean, customerId?: string) {
    return this.change(sourceId, id, customerId, async (c) => {
      requireLive(c.sub);
      requireUnscheduled(c.sub, 'its cancelation behavior');
      if (c.sub.cancelAtPeriodEnd === cancel) return;
      const before = { ...c.sub };
      c.sub.cancelAtPeriodEnd = cancel;
      await this.updated(c, before);
    });
  }

  /** Cancels at once (the provider's portal and dashboard): `customer.subscription.deleted`. */
  cancelNow(sourceId: string, id: string, customerId?: string) {
    return this.change(sourceId, id, customerId, async (c) => {
      requireLive(c.sub);
      await this.end(c, c.now);
    });
  }

  /**
   * The test clock: moves the subscription's clock `seconds` forward and makes happen, in order, what falls
   * in between: the trial's announced end, then at each period's end a cancellation, a trial ending without a
   * card, or a renewal (with the change a schedule holds) and its paid invoice.
   */
  advance(sourceId: string, id: string, seconds: number, record?: ClockRecorder) {
    return this.change(sourceId, id, undefined, async (c) => {
      const from = { clock: c.now, status: c.sub.status, current_period_end: c.sub.periodEnd };
      const target = c.now + seconds;
      for (;;) {
        const willEnd = c.sub.status === 'trialing' && c.sub.trialEnd !== null ? c.sub.trialEnd - TRIAL_WILL_END_S : undefined;
        if (willEnd !== undefined && c.now < willEnd && willEnd <= target) {
          c.now = willEnd;
          await this.emit(c, TRIAL_WILL_END, subscriptionObject(c.sub));
          continue;
        }
        if (!['active', 'trialing'].includes(c.sub.status) || c.sub.periodEnd > target) break;
        c.now = c.sub.periodEnd;
        await this.endPeriod(c);
      }
      c.now = target;
      await record?.(c.m, from, { clock: c.now, status: c.sub.status, current_period_end: c.sub.periodEnd });
      return { from: from.clock, to: target };
    }, seconds);
  }

  private async endPeriod(c: Change): Promise<void> {
    if (c.sub.cancelAtPeriodEnd) return this.end(c, c.now);
    const before = { ...c.sub };
    if (c.sub.status === 'trialing' && !c.sub.defaultPaymentMethod) {
      if (c.sub.missingPaymentMethod === 'cancel') return this.end(c, c.now);
      // No card to charge: the first invoice stays open and the subscription is past due (never renewed here).
      c.sub.status = 'past_due';
      return this.updated(c, before);
    }
    if (c.sub.scheduleId) {
      const schedule = (await this.sandbox.findSchedule(c.m, c.sub.scheduleId))!;
      Object.assign(c.sub, schedule.next);
      await this.endSchedule(c, schedule, 'released', true);
    }
    const charge = nextPeriodCharge(c.sub, c.sub);
    Object.assign(c.sub, { status: 'active', periodStart: charge.periodStart, periodEnd: charge.periodEnd });
    await this.updated(c, before);
    await this.invoice(c, 'subscription_cycle', charge, c.now);
  }

  /** Ends the subscription (`deleted`), canceling a schedule it had. */
  private async end(c: Change, canceledAt: number): Promise<void> {
    if (c.sub.scheduleId) await this.endSchedule(c, (await this.sandbox.findSchedule(c.m, c.sub.scheduleId))!, 'canceled');
    Object.assign(c.sub, { status: 'canceled', canceledAt, scheduleId: null });
    await this.emit(c, EVENT_TYPES.subscriptionDeleted, subscriptionObject(c.sub));
  }

  /**
   * A schedule released (its change taken or given up) or canceled with its subscription. `announcedByCaller`:
   * the caller sends the subscription's update itself (a renewal that takes the change).
   */
  private async endSchedule(c: Change, schedule: SandboxSchedule, status: 'released' | 'canceled', announcedByCaller = false) {
    const ended: SandboxSchedule = { ...schedule, status, releasedAt: c.now };
    await this.sandbox.updateSchedule(c.m, schedule.id, { status, releasedAt: c.now });
    await this.emit(c, status === 'released' ? SCHEDULE_EVENT.released : SCHEDULE_EVENT.canceled, scheduleObject(ended));
    const before = { ...c.sub };
    c.sub.scheduleId = null;
    if (status === 'released' && !announcedByCaller) await this.updated(c, before);
    return ended;
  }

  private async invoice(c: Change, billingReason: string, charge: SandboxCharge, at: number): Promise<void> {
    const invoice = {
      id: randomId('in_'),
      customerId: c.sub.customerId,
      subscriptionId: c.sub.id,
      tier: c.sub.tier,
      billingReason,
      status: 'paid' as const,
      metadata: {},
      lines: charge.lines,
      amountPaid: charge.amountDue,
      currency: c.sub.currency,
      periodStart: charge.periodStart,
      periodEnd: charge.periodEnd,
      created: at,
      paidAt: at,
    };
    await this.sandbox.insertInvoice(c.m, invoice);
    const object = invoiceObject({ ...invoice, subscriptionMetadata: c.sub.metadata, itemId: c.sub.itemId, hostedInvoiceUrl: this.urls.page(`/sandbox/invoices/${invoice.id}`) });
    await this.emit(c, EVENT_TYPES.invoicePaid, object);
  }

  /** `customer.subscription.updated` with the attributes that changed since `before`, as the provider sends it. */
  private async updated(c: Change, before: SubscriptionState): Promise<void> {
    const was = subscriptionObject(before) as Record<string, unknown>;
    const now = subscriptionObject(c.sub) as Record<string, unknown>;
    const previous = Object.fromEntries(Object.keys(was).filter((k) => JSON.stringify(was[k]) !== JSON.stringify(now[k])).map((k) => [k, was[k]]));
    if (Object.keys(previous).length) await this.emit(c, EVENT_TYPES.subscriptionUpdated, now, previous);
  }

  private async emit(c: Change, type: string, object: object, previous?: object): Promise<void> {
    c.lastCreated = Math.max(nowSeconds(), c.lastCreated + 1);
    await this.sandbox.addEvent(c.m, c.sourceId, eventEnvelope(type, object, c.lastCreated, previous));
  }

  /** Runs `fn` on the locked subscription and saves what it changed, with the clock moved by `clockMoved`. */
  private change<T>(sourceId: string, id: string, customerId: string | undefined, fn: (c: Change) => Promise<T>, clockMoved = 0) {
    return transaction(this.db, async (m) => {
      const row = await this.sandbox.lockSubscription(m, id, customerId);
      if (!row) throw notFound(id);
      const c: Change = { m, sourceId, sub: toState(row), now: clockOf(row), offset: row.clockOffset, lastCreated: row.lastEventCreated };
      const result = await fn(c);
      await this.sandbox.saveSubscription(m, fromState(c.sub, c.lastCreated, row.clockOffset + clockMoved));
      return { result, subscription: subscriptionObject(c.sub), now: c.now };
    });
  }
}

function notFound(id: string) {
  return new PaymentProviderError('not_found', `No such subscription: '${id}'`, 'subscription');
}

function requireLive(sub: SubscriptionState): void {
  if (!['active', 'trialing', 'past_due'].includes(sub.status)) {
    throw new PaymentProviderError('rejected', `A ${sub.status} subscription can only update its cancellation_details and metadata.`);
  }
}

function requireUnscheduled(sub: SubscriptionState, what: string): void {
  if (sub.scheduleId) {
    throw new PaymentProviderError(
      'rejected',
      `The subscription is managed by the subscription schedule \`${sub.scheduleId}\`, and updating ${what} directly is not allowed. Please update the schedule instead.`,
    );
  }
}

/** Like the provider: a proration date must lie within the current period, and not in the clock's future. */
function prorationDateOf(sub: SubscriptionState, at: number): number {
  if (at < sub.periodStart || at > sub.periodEnd) {
    throw new PaymentProviderError('rejected', 'proration_date must be within the current period of the subscription.', 'proration_date');
  }
  return at;
}

export function clockOf(row: SandboxSubscription): number {
  return nowSeconds() + row.clockOffset;
}

export function toState(row: SandboxSubscription): SubscriptionState {
  const { currentPeriodStart: periodStart, currentPeriodEnd: periodEnd, lastEventCreated: _last, clockOffset: _clock, ...same } = row;
  return { ...same, periodStart, periodEnd };
}

export function fromState(s: SubscriptionState, lastEventCreated: number, clockOffset = 0): SandboxSubscription {
  const { periodStart: currentPeriodStart, periodEnd: currentPeriodEnd, ...same } = s;
  return { ...same, currentPeriodStart, currentPeriodEnd, lastEventCreated, clockOffset };
}
