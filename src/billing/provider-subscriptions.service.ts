import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { SubscriptionFacts } from './provider-subscription-facts';
import {
  CorrectionStart,
  DriftState,
  HeldSchedule,
  KnownSubscription,
  LiveSubscription,
  PendingChange,
  ProviderSubscriptionsRepository,
  StoredSubscription,
} from './provider-subscriptions.repository';

// Other modules see the subscriptions through this service: its rows' types are part of it.
export type { DriftState, HeldSchedule, KnownSubscription, LiveSubscription, PendingChange, StoredSubscription };

/** What a subscription event (or a subscription fetched from the provider) says about its subscription. */
export interface SubscriptionChange extends SubscriptionFacts {
  kind: 'created' | 'updated' | 'deleted';
  /** The event's `created` and rank (created 1 < updated 2 < deleted 3). */
  created: number;
  rank: number;
  /** The resolved paid tier; undefined keeps the stored one (a deletion needs none). */
  tier?: string;
  /** How `tier` was resolved (webhook/tier-resolution.ts's TierSource), stored with it. */
  tierSource?: string;
}

/** What the provider says of a subscription now; an unresolved `tier` keeps the stored one (and how it was resolved). */
export type ProviderState = Omit<DriftState, 'tier'> & { tier?: string; tierSource?: string };

/** The state a subscription should have when it drifted from what the provider says, else undefined. */
export function drifted(stored: DriftState, now: ProviderState): DriftState | undefined {
  const after: DriftState = {
    tier: now.tier ?? stored.tier,
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

/** Whether a stored schedule and pending change differ from what the provider says (`now`). */
export function scheduleDrifted(stored: HeldSchedule, now: HeldSchedule): boolean {
  const [a, b] = [stored.pendingChange, now.pendingChange];
  // Field by field: a stored pending change comes back from jsonb with its keys in another order.
  const samePending = a === null || b === null ? a === b : a.tier === b.tier && a.interval === b.interval && a.seats === b.seats && a.effective_at === b.effective_at;
  return stored.scheduleId !== now.scheduleId || !samePending;
}

/** What one correction changed: its state, its schedule and pending change, or both, each before and after. */
export interface Correction {
  state?: { before: DriftState; after: DriftState };
  schedule?: { before: HeldSchedule; after: HeldSchedule };
}

/** The rank of a schedule event that ends a schedule (updated 1 < released, canceled, completed 2). */
const SCHEDULE_ENDED_RANK = 2;

export type ApplyResult =
  | { outcome: 'applied' }
  | { outcome: 'stale'; reason: string }
  /** An `.updated` with the same `created` as the last one applied: ask the provider which is current. */
  | { outcome: 'tie' };

/**
 * The provider subscriptions tied to an organisation (table provider_subscriptions), each with its state
 * in event order. Only this class writes the table; the license is derived from it (see subscriptionSql in
 * provider-subscriptions.repository.ts).
 * Every method runs in the caller's transaction (`manager`); the webhook holds the subscription id's
 * advisory lock meanwhile, so events of one subscription take turns across instances.
 */
@Injectable()
export class ProviderSubscriptions {
  constructor(private readonly repository: ProviderSubscriptionsRepository) {}

  find(manager: EntityManager, subscriptionId: string): Promise<KnownSubscription | undefined> {
    return this.repository.find(manager, subscriptionId);
  }

  /**
   * Applies one subscription event in order: an event older than the last one applied (by `created`, then
   * created < updated < deleted) is stale; a deletion is terminal and applies whatever was seen before;
   * a deleted subscription never comes back; two `.updated` of the same second are a tie for the caller
   * to settle (`force` then applies what the provider says now). `past_due_since` is the `created` of the
   * first event showing past_due after another status: later retries do not restart grace.
   */
  async apply(
    manager: EntityManager,
    subscription: { id: string; organisationId: string; customerId: string | undefined },
    known: KnownSubscription | undefined,
    change: SubscriptionChange,
    force = false,
  ): Promise<ApplyResult> {
    if (known?.deleted) {
      return { outcome: 'stale', reason: `subscription ${subscription.id} was ${change.kind === 'deleted' ? 'already ' : ''}deleted` };
    }
    if (!force && known && change.kind !== 'deleted' && known.lastEventCreated !== null) {
      const last = { created: known.lastEventCreated, rank: known.lastEventRank ?? 0 };
      if (change.created < last.created || (change.created === last.created && change.rank < last.rank)) {
        return { outcome: 'stale', reason: 'older than the last event applied to this subscription' };
      }
      if (change.created === last.created && change.rank === last.rank && change.kind === 'updated') return { outcome: 'tie' };
    }
    await this.repository.upsert(manager, {
      id: subscription.id,
      organisationId: subscription.organisationId,
      customerId: subscription.customerId ?? null,
      ...change,
      tier: change.tier ?? null,
      tierSource: change.tier === undefined ? null : (change.tierSource ?? null),
      // A new row's; a stored one's is kept or set by the upsert.
      pastDueSince: change.status === 'past_due' ? change.created : null,
      created: change.created,
      rank: change.rank,
      deleted: change.kind === 'deleted',
    });
    return { outcome: 'applied' };
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
   * Brings a subscription to what the provider says now (the reconciliation found it drifted): its state
   * (`now`) and, when given, its schedule and pending change (`schedule`, spec §9), both from one read of its
   * row. The caller holds the subscription's lock. `asOf` (now) becomes its last event time, so an older event
   * arriving later cannot undo the correction; the schedule is applied as the newest schedule event, of `asOf`
   * with the rank of an ending one, so a schedule event as old or older arriving later is stale. A
   * subscription the provider has canceled is deleted here, its schedule left as it is. Answers what changed
   * (each part before and after), else undefined.
   */
  async correct(
    manager: EntityManager,
    subscriptionId: string,
    now: ProviderState,
    schedule: HeldSchedule | undefined,
    asOf: number,
  ): Promise<Correction | undefined> {
    const row = await this.repository.findForCorrection(manager, subscriptionId);
    if (!row) return undefined;
    const state = await this.correctState(manager, subscriptionId, row, now, asOf);
    // Corrected to canceled, the row is deleted now: a deleted subscription takes no schedule.
    const deleted = state?.after.status === 'canceled';
    const held = schedule && !deleted ? await this.correctSchedule(manager, subscriptionId, row.schedule, schedule, asOf) : undefined;
    return state || held ? { ...(state && { state }), ...(held && { schedule: held }) } : undefined;
  }

  private async correctState(
    manager: EntityManager,
    subscriptionId: string,
    row: CorrectionStart,
    now: ProviderState,
    asOf: number,
  ): Promise<Correction['state']> {
    const before = row.state;
    const after = drifted(before, now);
    if (!after) return undefined;
    const pastDueSince = after.status !== 'past_due' ? null : before.status === 'past_due' ? (row.pastDueSince ?? asOf) : asOf;
    await this.repository.writeCorrection(manager, subscriptionId, after, now.tier === undefined ? null : (now.tierSource ?? null), pastDueSince, asOf);
    return { before, after };
  }

  private async correctSchedule(
    manager: EntityManager,
    subscriptionId: string,
    before: HeldSchedule,
    now: HeldSchedule,
    asOf: number,
  ): Promise<Correction['schedule']> {
    if (!scheduleDrifted(before, now)) return undefined;
    // A schedule that holds the subscription becomes its own, with its pending change; none lets go of the stored one.
    const schedule =
      now.scheduleId !== null
        ? { scheduleId: now.scheduleId, attached: true, pendingChange: now.pendingChange }
        : before.scheduleId !== null
          ? { scheduleId: before.scheduleId, attached: false, pendingChange: null }
          : undefined;
    if (!schedule) return undefined;
    const applied = await this.repository.writeSchedule(manager, subscriptionId, schedule, { created: asOf, rank: SCHEDULE_ENDED_RANK, force: true });
    return applied ? { before, after: now } : undefined;
  }

  /**
   * Applies what a subscription schedule says (spec §11.4, 11.5) to its subscription, in schedule event order
   * (`created`, then `rank`); `force` applies it past that order (the provider's answer to a change made here).
   * The caller holds the subscription's lock.
   */
  applySchedule(
    manager: EntityManager,
    subscriptionId: string,
    schedule: { scheduleId: string; attached: boolean; pendingChange: PendingChange | null },
    order: { created: number; rank: number; force?: boolean },
  ): Promise<boolean> {
    return this.repository.writeSchedule(manager, subscriptionId, schedule, { ...order, force: order.force ?? false });
  }

  /** The organisation's live subscription (spec §5: at most one), as its read and changes need it. */
  liveOf(organisationId: string, manager: EntityManager): Promise<LiveSubscription | undefined> {
    return this.repository.live(manager, organisationId);
  }

  /** Whether the organisation ever had a subscription, as far as this service knows (one trial per organisation). */
  everHad(organisationId: string, manager: EntityManager): Promise<boolean> {
    return this.repository.everHad(manager, organisationId);
  }

  /** The organisation's subscription that still bills, if any (for checkout: one at a time). */
  billingSubscriptionOf(organisationId: string, manager: EntityManager): Promise<{ id: string; status: string } | undefined> {
    return this.repository.latestBilling(manager, organisationId);
  }
}
