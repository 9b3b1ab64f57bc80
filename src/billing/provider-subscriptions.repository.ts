import { Injectable } from '@nestjs/common';
import { EntityManager, In, IsNull, MoreThan } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { PendingChange, ProviderSubscription } from './provider-subscription.entity';
import { HeldSchedule, SubscriptionFacts } from './provider-subscription-facts';

export type { HeldSchedule, PendingChange };

/**
 * Every query of provider_subscriptions: the only file with SQL for it. Each method runs in the caller's
 * transaction (`m`). The rules (event order, drift, grace's start on a correction) are in
 * provider-subscriptions.service.ts; the hot ones (the webhook's read and write) are hand-written SQL, the
 * reconciliation's and the checkout's go through TypeORM's Repository.
 */

/** Statuses in which a subscription still bills (or is about to): a second checkout would pay twice. */
export const BILLING_STATUSES = ['active', 'trialing', 'past_due', 'unpaid', 'incomplete'] as const;

/** A stored subscription, as far as event handling needs it. */
export interface KnownSubscription {
  organisationId: string;
  customerId: string | null;
  tier: string | null;
  status: string | null;
  pastDueSince: number | null;
  lastEventCreated: number | null;
  lastEventRank: number | null;
  /** A `customer.subscription.deleted` event was applied: deleted for good. */
  deleted: boolean;
}

/** What the reconciliation compares with the provider: `drifted` compares every field. */
export interface DriftState extends Omit<SubscriptionFacts, 'scheduleId'> {
  tier: string | null;
}

/** An organisation's live subscription, as its read and its changes (spec §11.4) need it. */
export interface LiveSubscription {
  id: string;
  organisationId: string;
  customerId: string | null;
  tier: string | null;
  status: string;
  interval: string | null;
  seats: number | null;
  periodEnd: number | null;
  cancelAtPeriodEnd: boolean;
  trialEnd: number | null;
  scheduleId: string | null;
  pendingChange: PendingChange | null;
}

/** A stored subscription that is not deleted, with what the reconciliation compares. */
export interface StoredSubscription {
  id: string;
  organisationId: string;
  customerId: string | null;
  state: DriftState;
  schedule: HeldSchedule;
}

/** A stored subscription as a correction (of its state and of its schedule) starts from. */
export interface CorrectionStart {
  state: DriftState;
  pastDueSince: number | null;
  schedule: HeldSchedule;
}

/** One applied event's values; `deleted` marks a `customer.subscription.deleted`. */
export interface SubscriptionWrite extends SubscriptionFacts {
  id: string;
  organisationId: string;
  customerId: string | null;
  tier: string | null;
  /** How `tier` was resolved; null with a null tier (the stored one and its source are kept). */
  tierSource: string | null;
  /** A new row's past_due_since (a stored one's is kept or set by UPSERT_SET). */
  pastDueSince: number | null;
  created: number;
  rank: number;
  deleted: boolean;
}

// The event names a schedule (or none, $12) and no schedule event newer than it was applied.
const SCHEDULE_SAID = `($12::boolean AND EXCLUDED.last_event_created >= COALESCE(s.schedule_event_created, 0))`;

/**
 * What an applied event changes on a stored subscription (`s`), given the event's values (EXCLUDED).
 * `past_due_since` is the `created` of the first event showing past_due after another status: later
 * retries do not restart grace. The schedule it names (when the object says, $12) replaces the stored one
 * unless a newer schedule event was applied; a pending change belongs to its schedule and goes with it.
 */
const UPSERT_SET = `tier = COALESCE(EXCLUDED.tier, s.tier),
  tier_source = CASE WHEN EXCLUDED.tier IS NULL THEN s.tier_source ELSE EXCLUDED.tier_source END, status = EXCLUDED.status,
  current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
  seats = EXCLUDED.seats, interval = EXCLUDED.interval, cancel_at_period_end = EXCLUDED.cancel_at_period_end,
  trial_end = EXCLUDED.trial_end,
  schedule_id = CASE WHEN ${SCHEDULE_SAID} THEN EXCLUDED.schedule_id ELSE s.schedule_id END,
  pending_change = CASE WHEN ${SCHEDULE_SAID} AND EXCLUDED.schedule_id IS DISTINCT FROM s.schedule_id THEN NULL
                        ELSE s.pending_change END,
  past_due_since = CASE WHEN EXCLUDED.status = 'past_due'
                        THEN CASE WHEN s.status = 'past_due' AND s.past_due_since IS NOT NULL THEN s.past_due_since
                                  ELSE EXCLUDED.last_event_created END END,
  last_event_created = GREATEST(s.last_event_created, EXCLUDED.last_event_created),
  last_event_rank = CASE WHEN EXCLUDED.last_event_created >= s.last_event_created OR s.last_event_created IS NULL
                         THEN EXCLUDED.last_event_rank ELSE s.last_event_rank END,
  deleted_event_created = CASE WHEN EXCLUDED.deleted_event_created IS NOT NULL THEN EXCLUDED.last_event_created END,
  updated_at = now()`;

const FIND_SQL = `
  SELECT organisation_id AS "organisationId", customer_id AS "customerId", tier, status,
         past_due_since AS "pastDueSince", last_event_created AS "lastEventCreated",
         last_event_rank AS "lastEventRank", deleted_event_created IS NOT NULL AS deleted
  FROM provider_subscriptions WHERE subscription_id = $1`;

const UPSERT_SQL = `
  INSERT INTO provider_subscriptions AS s (subscription_id, organisation_id, customer_id, tier, status,
    current_period_start, current_period_end, past_due_since, last_event_created, last_event_rank,
    deleted_event_created, schedule_id, seats, interval, cancel_at_period_end, trial_end, tier_source)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11 THEN $9::bigint END, $13, $14, $15, $16, $17, $18)
  ON CONFLICT (subscription_id) DO UPDATE SET ${UPSERT_SET}`;

// `asOf` becomes the last event time (rank of an update), so an older event arriving later cannot undo it.
const CORRECT_SQL = `
  UPDATE provider_subscriptions SET tier = $2, status = $3, current_period_start = $4, current_period_end = $5,
    past_due_since = $6, last_event_created = GREATEST(last_event_created, $7), last_event_rank = 2,
    seats = $8, interval = $9, cancel_at_period_end = $10, trial_end = $11,
    deleted_event_created = CASE WHEN $3 = 'canceled' THEN $7::bigint END, tier_source = COALESCE($12, tier_source), updated_at = now()
  WHERE subscription_id = $1`;

/**
 * A schedule's state applied to its subscription, in the order of schedule events ($5 created, $6 rank; $7
 * forces it: the provider's answer to a change is its newest state). A schedule that holds the subscription
 * ($3) becomes its schedule, with its pending change ($4); one that let go of it clears them, if they are its.
 */
const SCHEDULE_SQL = `
  UPDATE provider_subscriptions SET
    schedule_id = CASE WHEN $3 THEN $2 WHEN schedule_id = $2 THEN NULL ELSE schedule_id END,
    pending_change = CASE WHEN $3 THEN $4::jsonb WHEN schedule_id = $2 THEN NULL ELSE pending_change END,
    schedule_event_created = GREATEST(schedule_event_created, $5), schedule_event_rank = $6, updated_at = now()
  WHERE subscription_id = $1 AND deleted_event_created IS NULL
    AND ($7 OR schedule_event_created IS NULL OR (schedule_event_created, schedule_event_rank) <= ($5::bigint, $6::smallint))
  RETURNING 1 AS applied`;

/**
 * What keeps a subscription from shaping its organisation's license, each as a condition on its row, in the
 * order the explain read reports them: written once, for licenseCandidates and ofOrganisation.
 */
const NOT_CANDIDATE = [
  { reason: 'deleted', when: 'deleted_event_created IS NOT NULL' },
  { reason: 'no_tier', when: 'tier IS NULL' },
  { reason: 'no_status', when: 'status IS NULL' },
  { reason: 'incomplete', when: "status = 'incomplete'" },
] as const;

/** Why a subscription is not a license candidate (subscriptionSql.ofOrganisation's `not_candidate`). */
export type NotCandidate = (typeof NOT_CANDIDATE)[number]['reason'];

/**
 * Billing's subscriptions as SQL fragments, for other modules' one-round-trip statements (the status read
 * and the usage write derive the license from them inside their own statement).
 */
export const subscriptionSql = {
  /**
   * The subscriptions that can shape the organisation's license: not deleted, with a tier, and past
   * `incomplete` (a first payment still pending grants nothing yet): none of NOT_CANDIDATE holds. Columns:
   * subscription_id, tier, status, period_start, period_end, past_due_since, last_event_created, seats.
   */
  licenseCandidates: (organisationId: string) => `
    SELECT subscription_id, tier, status, current_period_start AS period_start, current_period_end AS period_end,
           past_due_since, last_event_created, seats
    FROM provider_subscriptions
    WHERE organisation_id = ${organisationId} AND ${NOT_CANDIDATE.map((c) => `NOT (${c.when})`).join(' AND ')}`,

  /**
   * Every subscription of the organisation, deleted ones too, with `not_candidate`: the first reason of
   * NOT_CANDIDATE that keeps it from being a license candidate (null for a candidate). Columns:
   * subscription_id, tier, tier_source, status, last_event_created, not_candidate.
   */
  ofOrganisation: (organisationId: string) => `
    SELECT subscription_id, tier, tier_source, status, last_event_created,
           CASE ${NOT_CANDIDATE.map((c) => `WHEN ${c.when} THEN '${c.reason}'`).join(' ')} END AS not_candidate
    FROM provider_subscriptions
    WHERE organisation_id = ${organisationId}`,
};

const DRIFT_COLUMNS = {
  tier: true,
  status: true,
  currentPeriodStart: true,
  currentPeriodEnd: true,
  seats: true,
  interval: true,
  cancelAtPeriodEnd: true,
  trialEnd: true,
} as const;

function driftState(row: ProviderSubscription): DriftState {
  return {
    tier: row.tier,
    status: row.status,
    periodStart: row.currentPeriodStart,
    periodEnd: row.currentPeriodEnd,
    seats: row.seats,
    interval: row.interval,
    cancelAtPeriodEnd: row.cancelAtPeriodEnd,
    trialEnd: row.trialEnd,
  };
}

const SCHEDULE_COLUMNS = { scheduleId: true, pendingChange: true } as const;

function storedSchedule(row: ProviderSubscription): HeldSchedule {
  return { scheduleId: row.scheduleId, pendingChange: row.pendingChange };
}

function stored(row: ProviderSubscription): StoredSubscription {
  return { id: row.subscriptionId, organisationId: row.organisationId, customerId: row.customerId, state: driftState(row), schedule: storedSchedule(row) };
}

const STORED_COLUMNS = { subscriptionId: true, organisationId: true, customerId: true, ...DRIFT_COLUMNS, ...SCHEDULE_COLUMNS } as const;

@Injectable()
export class ProviderSubscriptionsRepository {
  async find(m: EntityManager, subscriptionId: string): Promise<KnownSubscription | undefined> {
    const [row] = await preparedQuery<KnownSubscription>(m, FIND_SQL, [subscriptionId]);
    return row;
  }

  /** Inserts the subscription or applies the event's values to the stored one (UPSERT_SET). */
  async upsert(m: EntityManager, w: SubscriptionWrite): Promise<void> {
    await preparedQuery(m, UPSERT_SQL, [
      w.id,
      w.organisationId,
      w.customerId,
      w.tier,
      w.status,
      w.periodStart,
      w.periodEnd,
      w.pastDueSince,
      w.created,
      w.rank,
      w.deleted,
      w.scheduleId !== undefined,
      w.scheduleId ?? null,
      w.seats,
      w.interval,
      w.cancelAtPeriodEnd,
      w.trialEnd,
      w.tierSource,
    ]);
  }

  /** A page of the subscriptions not deleted, by id after `afterId`. */
  async listNotDeleted(m: EntityManager, afterId: string | undefined, limit: number): Promise<StoredSubscription[]> {
    const rows = await m.getRepository(ProviderSubscription).find({
      select: STORED_COLUMNS,
      where: { deletedEventCreated: IsNull(), ...(afterId === undefined ? {} : { subscriptionId: MoreThan(afterId) }) },
      order: { subscriptionId: 'ASC' },
      take: limit,
    });
    return rows.map(stored);
  }

  /** Those of `ids` stored and not deleted. */
  async findNotDeleted(m: EntityManager, ids: string[]): Promise<StoredSubscription[]> {
    if (!ids.length) return [];
    const rows = await m.getRepository(ProviderSubscription).find({
      select: STORED_COLUMNS,
      where: { subscriptionId: In(ids), deletedEventCreated: IsNull() },
    });
    return rows.map(stored);
  }

  /**
   * A subscription not deleted, with its grace start and its schedule: what a correction of both starts from,
   * read once under the caller's lock.
   */
  async findForCorrection(m: EntityManager, subscriptionId: string): Promise<CorrectionStart | undefined> {
    const row = await m.getRepository(ProviderSubscription).findOne({
      select: { ...DRIFT_COLUMNS, ...SCHEDULE_COLUMNS, pastDueSince: true },
      where: { subscriptionId, deletedEventCreated: IsNull() },
    });
    if (!row) return undefined;
    return { state: driftState(row), pastDueSince: row.pastDueSince, schedule: storedSchedule(row) };
  }

  /** Writes a corrected state; a `canceled` one is deleted for good. */
  async writeCorrection(m: EntityManager, subscriptionId: string, after: DriftState, tierSource: string | null, pastDueSince: number | null, asOf: number): Promise<void> {
    await preparedQuery(m, CORRECT_SQL, [
      subscriptionId,
      after.tier,
      after.status,
      after.periodStart,
      after.periodEnd,
      pastDueSince,
      asOf,
      after.seats,
      after.interval,
      after.cancelAtPeriodEnd,
      after.trialEnd,
      tierSource,
    ]);
  }

  /** Applies a schedule's state (SCHEDULE_SQL); false when it is older than the last schedule event applied. */
  async writeSchedule(
    m: EntityManager,
    subscriptionId: string,
    schedule: { scheduleId: string; attached: boolean; pendingChange: PendingChange | null },
    order: { created: number; rank: number; force: boolean },
  ): Promise<boolean> {
    const rows = await preparedQuery(m, SCHEDULE_SQL, [
      subscriptionId,
      schedule.scheduleId,
      schedule.attached,
      schedule.pendingChange === null ? null : JSON.stringify(schedule.pendingChange),
      order.created,
      order.rank,
      order.force,
    ]);
    return rows.length === 1;
  }

  /** Whether the organisation has had any subscription, in any status, deleted ones included. */
  everHad(m: EntityManager, organisationId: string): Promise<boolean> {
    return m.getRepository(ProviderSubscription).existsBy({ organisationId });
  }

  /** The organisation's latest subscription in a billing status (its live one), if any. */
  async live(m: EntityManager, organisationId: string): Promise<LiveSubscription | undefined> {
    const row = await m.getRepository(ProviderSubscription).findOne({
      where: { organisationId, deletedEventCreated: IsNull(), status: In([...BILLING_STATUSES]) },
      order: { lastEventCreated: { direction: 'DESC', nulls: 'LAST' } },
    });
    if (!row) return undefined;
    const { subscriptionId: id, customerId, tier, status, interval, seats, currentPeriodEnd: periodEnd, cancelAtPeriodEnd, trialEnd } = row;
    return { id, organisationId, customerId, tier, status: status!, interval, seats, periodEnd, cancelAtPeriodEnd, trialEnd, scheduleId: row.scheduleId, pendingChange: row.pendingChange };
  }

  /** The organisation's latest subscription in a billing status, if any. */
  async latestBilling(m: EntityManager, organisationId: string): Promise<{ id: string; status: string } | undefined> {
    const row = await m.getRepository(ProviderSubscription).findOne({
      select: { subscriptionId: true, status: true },
      where: { organisationId, deletedEventCreated: IsNull(), status: In([...BILLING_STATUSES]) },
      order: { lastEventCreated: { direction: 'DESC', nulls: 'LAST' } },
    });
    return row ? { id: row.subscriptionId, status: row.status! } : undefined;
  }
}
