import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { z, ZodType } from 'zod';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { PriceCatalog } from '../provider/price-catalog';
import { EVENT_TYPES, idOf } from '../provider/provider-event';
import { ScheduleObject, scheduleSchema, SubscriptionObject, subscriptionSchema, wrongTypes } from '../provider/provider-objects';
import { EVENT_RANK, EventPosition, isOlder, SCHEDULE_ENDED_RANK, SCHEDULE_EVENT_RANK } from './event-order';
import { LicenseChanges } from './license-changes.port';
import { lockProviderIds } from './provider-locks';
import { HeldSchedule, heldSchedule, scheduleDrifted, scheduleFacts, ScheduleState, scheduleState, SubscriptionFacts, subscriptionFacts } from './subscription-facts';
import { DriftState, KnownSubscription, LiveSubscription, StoredSubscription, SubscriptionRow, SubscriptionsRepository } from './subscriptions.repository';
import { PlanVersionsService } from './plan-versions.service';
import { resolveTier, TierResolution, tierOfPrice } from './tier-resolution';

// Other modules see the subscriptions through this service: its rows' types are part of it.
export type { DriftState, KnownSubscription, LiveSubscription, StoredSubscription };

/** What a provider subscription object says, read once: its facts and its tier (or why it has none). */
export interface SubscriptionReading extends SubscriptionFacts {
  tier: TierResolution;
}

/** A subscription event: its kind, its place in the event order, and what its object says. */
export interface SubscriptionEvent {
  kind: 'created' | 'updated' | 'deleted';
  position: EventPosition;
  reading: SubscriptionReading;
}

/** The subscription an event is applied to: its id and the organisation and customer it belongs to. */
export interface SubscriptionTarget {
  id: string;
  organisationId: string;
  customerId: string | undefined;
}

export type ApplyResult =
  | { outcome: 'applied' }
  | { outcome: 'stale'; reason: string }
  /** An `.updated` with the same `created` as the last one applied: ask the provider which is current. */
  | { outcome: 'tie' };

/** What one correction changed: its state, its schedule and pending change, or both, each before and after. */
export interface Correction {
  state?: { before: DriftState; after: DriftState };
  schedule?: { before: HeldSchedule; after: HeldSchedule };
}

/** What the reconciliation made of one stored subscription and the provider's (spec §9). */
export type Reconciled = { corrected: Correction } | { unchanged: true } | { skipped: string };

/**
 * When grace starts (spec §5): the `created` of the first event showing past_due after another status; later
 * ones keep it, so the provider's retries (which move the period forward) never restart grace. Null when the
 * subscription is not past_due.
 */
export function pastDueSince(before: Pick<KnownSubscription, 'status' | 'pastDueSince'> | undefined, status: string | null, at: number): number | null {
  if (status !== 'past_due') return null;
  return before?.status === 'past_due' && before.pastDueSince !== null ? before.pastDueSince : at;
}

/** The state a subscription should have when it drifted from what the provider says, else undefined. */
export function drifted(stored: DriftState, now: SubscriptionReading): DriftState | undefined {
  const after: DriftState = {
    tier: 'tier' in now.tier ? now.tier.tier : stored.tier,
    status: now.status,
    periodStart: now.periodStart,
    periodEnd: now.periodEnd,
    seats: now.seats,
    interval: now.interval,
    cancelAtPeriodEnd: now.cancelAtPeriodEnd,
    trialEnd: now.trialEnd,
  };
  return JSON.stringify(stored) === JSON.stringify(after) ? undefined : after;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The provider subscriptions tied to an organisation (table provider_subscriptions): the only writer of the
 * table, and the one home of its rules: the reading of a provider object (its facts and its tier), event order,
 * when grace starts, what a schedule holds. Every write runs under the subscription's lock (lockProviderIds),
 * in the caller's transaction (`manager`) or its own, and reads the stored row after taking it: events,
 * corrections and the provider's answers of one subscription take turns across instances. A change that may
 * move the organisation's license tells LicenseChanges in the same transaction.
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repository: SubscriptionsRepository,
    private readonly config: AppConfig,
    private readonly catalog: PriceCatalog,
    private readonly licenseChanges: LicenseChanges,
    private readonly versions: PlanVersionsService,
  ) {}

  /** Reads a provider subscription object: its facts and its tier, resolved once (spec §5; a price of any plan version, §17). */
  read(sub: SubscriptionObject): SubscriptionReading {
    return { ...subscriptionFacts(sub), tier: resolveTier(sub, { tiers: this.config.tiers, providerPrices: this.versions.tierPrices() }) };
  }

  /** The tier a price id of any of its plan versions sells (spec §5, §17), if any. */
  tierOfPrice(priceId: string | undefined): string | undefined {
    return tierOfPrice(priceId, this.versions.tierPrices());
  }

  find(manager: EntityManager, subscriptionId: string): Promise<KnownSubscription | undefined> {
    return this.repository.find(manager, subscriptionId);
  }

  /** Takes the locks a subscription's events take (its own id and its customer's), in the caller's transaction. */
  lock(manager: EntityManager, providerIds: (string | undefined)[]): Promise<void> {
    return lockProviderIds(manager, providerIds);
  }

  /**
   * Applies one subscription event in order: an event older than the last one applied is stale; a deletion is
   * terminal and applies whatever was seen before; a deleted subscription never comes back; two `.updated` of
   * the same second are a tie for the caller to settle (`force` then applies what the provider says now). The
   * caller holds the subscription's lock and read `known` under it.
   */
  async apply(manager: EntityManager, target: SubscriptionTarget, known: KnownSubscription | undefined, event: SubscriptionEvent, force = false): Promise<ApplyResult> {
    const { kind, position } = event;
    if (known?.deleted) return { outcome: 'stale', reason: `subscription ${target.id} was ${kind === 'deleted' ? 'already ' : ''}deleted` };
    const last = known?.lastEvent;
    if (!force && last && kind !== 'deleted') {
      if (isOlder(position, last)) return { outcome: 'stale', reason: 'older than the last event applied to this subscription' };
      if (position.created === last.created && position.rank === last.rank && kind === 'updated') return { outcome: 'tie' };
    }
    await this.repository.upsert(manager, this.next(target, known, event));
    return { outcome: 'applied' };
  }

  /** The row after an event: what its object says, over what was stored. */
  private next(target: SubscriptionTarget, known: KnownSubscription | undefined, { kind, position, reading }: SubscriptionEvent): SubscriptionRow {
    const resolved = 'tier' in reading.tier ? reading.tier : undefined;
    // The schedule a subscription object names replaces the stored one unless a newer schedule event was applied;
    // a pending change belongs to its schedule and goes with it.
    const scheduleSaid = reading.scheduleId !== undefined && position.created >= (known?.scheduleEvent?.created ?? 0);
    const scheduleId = scheduleSaid ? reading.scheduleId! : (known?.schedule.scheduleId ?? null);
    const stored = known?.schedule.scheduleId ?? null;
    const newest = !known?.lastEvent || !isOlder(position, known.lastEvent);
    return {
      id: target.id,
      organisationId: target.organisationId,
      customerId: target.customerId ?? null,
      tier: resolved?.tier ?? known?.tier ?? null,
      tierSource: resolved ? resolved.source : (known?.tierSource ?? null),
      status: reading.status,
      periodStart: reading.periodStart,
      periodEnd: reading.periodEnd,
      seats: reading.seats,
      interval: reading.interval,
      cancelAtPeriodEnd: reading.cancelAtPeriodEnd,
      trialEnd: reading.trialEnd,
      schedule: { scheduleId, pendingChange: scheduleSaid && scheduleId !== stored ? null : (known?.schedule.pendingChange ?? null) },
      pastDueSince: pastDueSince(known, reading.status, position.created),
      lastEvent: newest ? position : known!.lastEvent!,
      deletedEventCreated: kind === 'deleted' ? position.created : null,
    };
  }

  /**
   * Applies what the provider says a subscription is now (`object`, an answer of its API) as of `asOf` (Unix
   * seconds), past the event order, as an `.updated` of that second: events of it created before `asOf` are stale
   * afterwards, one of the same second is a tie settled by asking the provider again. Spec §6's tie rule and the
   * provider's answer to a change (spec §11.4) both come here, so they are applied alike. The caller holds the lock.
   */
  applyCurrent(manager: EntityManager, target: SubscriptionTarget, known: KnownSubscription | undefined, object: SubscriptionObject, asOf: number): Promise<ApplyResult> {
    const event: SubscriptionEvent = { kind: 'updated', position: { created: asOf, rank: EVENT_RANK[EVENT_TYPES.subscriptionUpdated] }, reading: this.read(object) };
    return this.apply(manager, target, known, event, true);
  }

  /**
   * The provider's answer to a change of one of the organisation's subscriptions, applied in the caller's
   * transaction under the lock its webhook events take (so they wait, and then find it applied), with what it
   * may change in the license.
   */
  async applyAnswer(manager: EntityManager, organisationId: string, answer: Record<string, any>, asOf: number): Promise<void> {
    const object = providerObject(subscriptionSchema, answer, 'subscription');
    const id = idOf(object.id)!;
    const customerId = idOf(object.customer);
    await this.lock(manager, [customerId, id]);
    const known = await this.find(manager, id);
    await this.applyCurrent(manager, { id, organisationId, customerId }, known, object, asOf);
    await this.licenseChanges.licenseMayHaveChanged(manager, organisationId);
  }

  /**
   * A `subscription_schedule.*` event (spec §11.5) for a stored subscription that is not deleted, in the order of
   * schedule events among themselves: `.updated` keeps the change its next phase makes, the others end the
   * schedule. False when it is older than the last schedule event applied. The caller holds the lock.
   */
  async applyScheduleEvent(manager: EntityManager, subscriptionId: string, known: KnownSubscription, schedule: ScheduleObject, type: string, created: number): Promise<boolean> {
    const rank = SCHEDULE_EVENT_RANK[type];
    const facts = scheduleFacts(schedule);
    const state = this.scheduleState({ ...facts, attached: rank !== SCHEDULE_ENDED_RANK && facts.attached });
    const position = { created, rank };
    if (known.scheduleEvent && isOlder(position, known.scheduleEvent)) return false;
    await this.writeSchedule(manager, subscriptionId, known, state, position);
    return true;
  }

  /** A schedule the provider answered (a change made here), applied to its subscription as its newest schedule state. */
  async applyScheduleAnswer(manager: EntityManager, answer: Record<string, any>, asOf: number): Promise<void> {
    const facts = scheduleFacts(providerObject(scheduleSchema, answer, 'schedule'));
    if (!facts.subscriptionId) return;
    const known = await this.find(manager, facts.subscriptionId);
    if (!known || known.deleted) return;
    await this.writeSchedule(manager, facts.subscriptionId, known, this.scheduleState(facts), { created: asOf, rank: SCHEDULE_ENDED_RANK });
  }

  private scheduleState(facts: ReturnType<typeof scheduleFacts>): ScheduleState {
    return scheduleState(facts, (priceId) => this.catalog.planOfPrice(priceId));
  }

  /**
   * A schedule that holds the subscription becomes its schedule, with its pending change; one that let go of it
   * clears them, if they are its. The last schedule event applied moves to `position` (never back in time).
   */
  private async writeSchedule(manager: EntityManager, subscriptionId: string, known: KnownSubscription, state: ScheduleState, position: EventPosition): Promise<void> {
    const stored = known.schedule;
    const its = stored.scheduleId === state.scheduleId;
    const schedule: HeldSchedule = state.attached
      ? { scheduleId: state.scheduleId, pendingChange: state.pendingChange }
      : { scheduleId: its ? null : stored.scheduleId, pendingChange: its ? null : stored.pendingChange };
    const last = known.scheduleEvent;
    await this.repository.writeSchedule(manager, subscriptionId, schedule, { created: Math.max(last?.created ?? position.created, position.created), rank: position.rank });
  }

  /** A page of the subscriptions not deleted, by id after `afterId`: the reconciliation's known ones. */
  listNotDeleted(manager: EntityManager, afterId: string | undefined, limit: number): Promise<StoredSubscription[]> {
    return this.repository.listNotDeleted(manager, afterId, limit);
  }

  /** Those of `ids` stored and not deleted, by id: what the reconciliation compares with a page of the provider's. */
  async findNotDeleted(manager: EntityManager, ids: string[]): Promise<Map<string, StoredSubscription>> {
    const rows = await this.repository.findNotDeleted(manager, ids);
    return new Map(rows.map((r) => [r.id, r]));
  }

  /**
   * Brings a stored subscription to what the provider says now (`object`, with its schedule expanded or named;
   * spec §9): its state and, when the object says, its schedule and pending change, in one transaction under its
   * lock. `asOf` (now) becomes its last event time, so an older event arriving later cannot undo the correction;
   * the schedule is applied as the newest schedule event, with the ending rank. A subscription the provider has
   * canceled is deleted here, its schedule left as it is. Only a change of its state may move the license.
   */
  async reconcile(stored: StoredSubscription, object: Record<string, any>): Promise<Reconciled> {
    const parsed = subscriptionSchema.safeParse(object);
    if (!parsed.success) return { skipped: `the provider's subscription does not fit: ${wrongTypes(subscriptionSchema, object)}` };
    const now = this.read(parsed.data);
    // A canceled one needs no tier of ours.
    if ('error' in now.tier && now.status !== 'canceled') return { skipped: now.tier.error };
    const schedule = heldSchedule(parsed.data, (priceId) => this.catalog.planOfPrice(priceId));
    // Most pages hold no drift: compared here without a transaction, then again under the lock.
    const scheduleDrift = schedule !== undefined && scheduleDrifted(stored.schedule, schedule);
    if (!drifted(stored.state, now) && !scheduleDrift) return { unchanged: true };
    const correction = await transaction(this.db, async (manager) => {
      await this.lock(manager, [stored.customerId ?? undefined, stored.id]);
      const known = await this.repository.find(manager, stored.id);
      if (!known || known.deleted) return undefined;
      const asOf = nowSeconds();
      const state = await this.correctState(manager, stored, known, now, asOf);
      // Corrected to canceled, the row is deleted now: a deleted subscription takes no schedule.
      const held = scheduleDrift && state?.after.status !== 'canceled' ? await this.correctSchedule(manager, stored.id, known, schedule, asOf) : undefined;
      // After both writes: the schedule's locks no row the state's did not (the same row), and a pending change shapes no license.
      if (state) await this.licenseChanges.licenseMayHaveChanged(manager, stored.organisationId);
      return state || held ? { ...(state && { state }), ...(held && { schedule: held }) } : undefined;
    });
    return correction ? { corrected: correction } : { unchanged: true };
  }

  private async correctState(manager: EntityManager, target: StoredSubscription, known: KnownSubscription & DriftState, now: SubscriptionReading, asOf: number): Promise<Correction['state']> {
    const before: DriftState = { tier: known.tier, status: known.status, periodStart: known.periodStart, periodEnd: known.periodEnd, seats: known.seats, interval: known.interval, cancelAtPeriodEnd: known.cancelAtPeriodEnd, trialEnd: known.trialEnd };
    const after = drifted(before, now);
    if (!after) return undefined;
    const position = { created: Math.max(known.lastEvent?.created ?? asOf, asOf), rank: EVENT_RANK[EVENT_TYPES.subscriptionUpdated] };
    const row = this.next({ id: target.id, organisationId: target.organisationId, customerId: target.customerId ?? undefined }, known, { kind: 'updated', position, reading: { ...now, scheduleId: undefined } });
    await this.repository.writeState(manager, { ...row, pastDueSince: pastDueSince(known, after.status, asOf), deletedEventCreated: after.status === 'canceled' ? asOf : null });
    return { before, after };
  }

  private async correctSchedule(manager: EntityManager, subscriptionId: string, known: KnownSubscription, now: HeldSchedule, asOf: number): Promise<Correction['schedule']> {
    const before = known.schedule;
    if (!scheduleDrifted(before, now)) return undefined;
    // A schedule that holds the subscription becomes its own, with its pending change; none lets go of the stored one.
    const state: ScheduleState | undefined =
      now.scheduleId !== null
        ? { scheduleId: now.scheduleId, attached: true, pendingChange: now.pendingChange }
        : before.scheduleId !== null
          ? { scheduleId: before.scheduleId, attached: false, pendingChange: null }
          : undefined;
    if (!state) return undefined;
    await this.writeSchedule(manager, subscriptionId, known, state, { created: asOf, rank: SCHEDULE_ENDED_RANK });
    return { before, after: now };
  }

  /** The organisation's live subscription (spec §5: at most one), as its read and changes need it. */
  liveOf(manager: EntityManager, organisationId: string): Promise<LiveSubscription | undefined> {
    return this.repository.live(manager, organisationId);
  }

  /** Whether the organisation ever had a subscription, as far as this service knows (one trial per organisation). */
  everHad(manager: EntityManager, organisationId: string): Promise<boolean> {
    return this.repository.everHad(manager, organisationId);
  }

  /** The organisation's subscription that still bills, if any (for checkout: one at a time). */
  billingSubscriptionOf(manager: EntityManager, organisationId: string): Promise<{ id: string; status: string } | undefined> {
    return this.repository.latestBilling(manager, organisationId);
  }
}

/** An answer of the provider's API read as the object it is; one that does not fit is the provider's error. */
function providerObject<S extends ZodType>(schema: S, answer: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(answer);
  if (!parsed.success) throw new Error(`the provider's ${what} does not fit: ${wrongTypes(schema, answer)}`);
  return parsed.data;
}
