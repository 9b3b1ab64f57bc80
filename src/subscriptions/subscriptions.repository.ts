import { Injectable } from '@nestjs/common';
import { EntityManager, In, IsNull, MoreThan } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import type { EventPosition } from './event-order';
import { PendingChange, ProviderSubscription } from './provider-subscription.entity';
import { HeldSchedule, SubscriptionFacts } from './subscription-facts';

/**
 * Every query of provider_subscriptions: the only file with SQL for it. Each method runs in the caller's
 * transaction (`m`) and writes what it is given: the rules (event order, when grace starts, what a schedule
 * holds) are SubscriptionsService's, applied to the row it read under the subscription's lock. The webhook's
 * read and write are hand-written and prepared; the reconciliation's and the checkout's go through TypeORM.
 */

/** Statuses in which a subscription still bills (or is about to): a second checkout would pay twice. */
export const BILLING_STATUSES = ['active', 'trialing', 'past_due', 'unpaid', 'incomplete'] as const;

/** What a subscription says of itself, as stored: the reconciliation compares it with the provider's (every field). */
export interface DriftState extends Omit<SubscriptionFacts, 'scheduleId'> {
  tier: string | null;
}

/** A stored subscription, as the rules that change it read it (under its lock). */
export interface KnownSubscription {
  organisationId: string;
  customerId: string | null;
  tier: string | null;
  tierSource: string | null;
  status: string | null;
  pastDueSince: number | null;
  /** The last subscription event applied (null: none yet). */
  lastEvent: EventPosition | null;
  /** The schedule that holds it and its change, and the last schedule event applied. */
  schedule: HeldSchedule;
  scheduleEvent: EventPosition | null;
  /** A `customer.subscription.deleted` event was applied: deleted for good. */
  deleted: boolean;
}

/** A subscription's row as written: every column the rules decide. */
export interface SubscriptionRow extends DriftState {
  id: string;
  organisationId: string;
  customerId: string | null;
  tierSource: string | null;
  schedule: HeldSchedule;
  pastDueSince: number | null;
  lastEvent: EventPosition;
  /** `created` of its deletion event (null: not deleted). */
  deletedEventCreated: number | null;
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
  /** The plan version of its tier it is on (spec §17). */
  planVersion: number | null;
}

/** The subscription as a move reads it, under its lock. */
export interface MovingSubscription {
  organisationId: string;
  customerId: string | null;
  tier: string | null;
  planVersion: number | null;
  interval: string | null;
  periodEnd: number | null;
  cancelAtPeriodEnd: boolean;
  pendingChange: { tier: string | null; interval: string | null; seats: number | null } | null;
  deleted: boolean;
}

/** A stored subscription that is not deleted, with what the reconciliation compares. */
export interface StoredSubscription {
  id: string;
  organisationId: string;
  customerId: string | null;
  state: DriftState;
  schedule: HeldSchedule;
}

const FIND_SQL = `
  SELECT organisation_id AS "organisationId", customer_id AS "customerId", tier, tier_source AS "tierSource", status,
         current_period_start AS "periodStart", current_period_end AS "periodEnd", seats, interval,
         cancel_at_period_end AS "cancelAtPeriodEnd", trial_end AS "trialEnd", past_due_since AS "pastDueSince",
         last_event_created AS "lastEventCreated", last_event_rank AS "lastEventRank",
         schedule_id AS "scheduleId", pending_change AS "pendingChange",
         schedule_event_created AS "scheduleEventCreated", schedule_event_rank AS "scheduleEventRank",
         deleted_event_created IS NOT NULL AS deleted
  FROM provider_subscriptions WHERE subscription_id = $1`;

interface FoundRow extends Omit<KnownSubscription, 'lastEvent' | 'schedule' | 'scheduleEvent'>, DriftState {
  lastEventCreated: number | null;
  lastEventRank: number | null;
  scheduleId: string | null;
  pendingChange: PendingChange | null;
  scheduleEventCreated: number | null;
  scheduleEventRank: number | null;
}

// The organisation and the customer of a stored subscription never change.
const UPSERT_SQL = `
  INSERT INTO provider_subscriptions AS s (subscription_id, organisation_id, customer_id, tier, tier_source, status,
    current_period_start, current_period_end, seats, interval, cancel_at_period_end, trial_end, schedule_id, pending_change,
    past_due_since, last_event_created, last_event_rank, deleted_event_created)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
  ON CONFLICT (subscription_id) DO UPDATE SET tier = EXCLUDED.tier, tier_source = EXCLUDED.tier_source, status = EXCLUDED.status,
    current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
    seats = EXCLUDED.seats, interval = EXCLUDED.interval, cancel_at_period_end = EXCLUDED.cancel_at_period_end,
    trial_end = EXCLUDED.trial_end, schedule_id = EXCLUDED.schedule_id, pending_change = EXCLUDED.pending_change,
    past_due_since = EXCLUDED.past_due_since, last_event_created = EXCLUDED.last_event_created,
    last_event_rank = EXCLUDED.last_event_rank, deleted_event_created = EXCLUDED.deleted_event_created, updated_at = now()`;

// A correction of its state (the reconciliation): its schedule is corrected on its own (SCHEDULE_SQL).
const STATE_SQL = `
  UPDATE provider_subscriptions SET tier = $2, tier_source = $3, status = $4, current_period_start = $5, current_period_end = $6,
    seats = $7, interval = $8, cancel_at_period_end = $9, trial_end = $10, past_due_since = $11, last_event_created = $12,
    last_event_rank = $13, deleted_event_created = $14, updated_at = now()
  WHERE subscription_id = $1`;

const SCHEDULE_SQL = `
  UPDATE provider_subscriptions SET schedule_id = $2, pending_change = $3::jsonb, schedule_event_created = $4,
    schedule_event_rank = $5, updated_at = now()
  WHERE subscription_id = $1`;

const MOVING_SQL = `
  SELECT organisation_id AS "organisationId", customer_id AS "customerId", tier, plan_version AS "planVersion", interval,
         current_period_end::float8 AS "periodEnd", cancel_at_period_end AS "cancelAtPeriodEnd", pending_change AS "pendingChange",
         deleted_event_created IS NOT NULL AS deleted
  FROM provider_subscriptions WHERE subscription_id = $1`;

// The version now. Same tier: the trigger keeps it (it moves a subscription's version only when its tier changes).
const MOVE_NOW_SQL = `
  UPDATE provider_subscriptions SET plan_version = $3, next_plan_version = NULL, next_plan_version_at = NULL, updated_at = now()
  WHERE subscription_id = $1 AND tier = $2`;

// The version from the end of the current period: the trigger puts it in force when a later period shows.
const MOVE_AT_PERIOD_END_SQL = `
  UPDATE provider_subscriptions SET next_plan_version = $3, next_plan_version_at = current_period_end, updated_at = now()
  WHERE subscription_id = $1 AND tier = $2`;

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

function stored(row: ProviderSubscription): StoredSubscription {
  return {
    id: row.subscriptionId,
    organisationId: row.organisationId,
    customerId: row.customerId,
    state: driftState(row),
    schedule: { scheduleId: row.scheduleId, pendingChange: row.pendingChange },
  };
}

const STORED_COLUMNS = { subscriptionId: true, organisationId: true, customerId: true, ...DRIFT_COLUMNS, ...SCHEDULE_COLUMNS } as const;

const position = (created: number | null, rank: number | null): EventPosition | null => (created === null ? null : { created, rank: rank ?? 0 });

@Injectable()
export class SubscriptionsRepository {
  async find(m: EntityManager, subscriptionId: string): Promise<(KnownSubscription & DriftState) | undefined> {
    const [row] = await preparedQuery<FoundRow>(m, FIND_SQL, [subscriptionId]);
    if (!row) return undefined;
    const { lastEventCreated, lastEventRank, scheduleId, pendingChange, scheduleEventCreated, scheduleEventRank, ...rest } = row;
    return {
      ...rest,
      lastEvent: position(lastEventCreated, lastEventRank),
      schedule: { scheduleId, pendingChange },
      scheduleEvent: position(scheduleEventCreated, scheduleEventRank),
    };
  }

  /** Writes the subscription's row, a new one or over the stored one. */
  async upsert(m: EntityManager, w: SubscriptionRow): Promise<void> {
    await preparedQuery(m, UPSERT_SQL, [
      w.id,
      w.organisationId,
      w.customerId,
      w.tier,
      w.tierSource,
      w.status,
      w.periodStart,
      w.periodEnd,
      w.seats,
      w.interval,
      w.cancelAtPeriodEnd,
      w.trialEnd,
      w.schedule.scheduleId,
      w.schedule.pendingChange === null ? null : JSON.stringify(w.schedule.pendingChange),
      w.pastDueSince,
      w.lastEvent.created,
      w.lastEvent.rank,
      w.deletedEventCreated,
    ]);
  }

  /** Writes a stored subscription's state: every column of the row but its schedule's. */
  async writeState(m: EntityManager, w: Omit<SubscriptionRow, 'organisationId' | 'customerId' | 'schedule'>): Promise<void> {
    await preparedQuery(m, STATE_SQL, [
      w.id,
      w.tier,
      w.tierSource,
      w.status,
      w.periodStart,
      w.periodEnd,
      w.seats,
      w.interval,
      w.cancelAtPeriodEnd,
      w.trialEnd,
      w.pastDueSince,
      w.lastEvent.created,
      w.lastEvent.rank,
      w.deletedEventCreated,
    ]);
  }

  /** Writes the schedule that holds the subscription (and its change), with the schedule event that said so. */
  async writeSchedule(m: EntityManager, subscriptionId: string, schedule: HeldSchedule, event: EventPosition): Promise<void> {
    const pending = schedule.pendingChange === null ? null : JSON.stringify(schedule.pendingChange);
    await preparedQuery(m, SCHEDULE_SQL, [subscriptionId, schedule.scheduleId, pending, event.created, event.rank]);
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
    return { id, organisationId, customerId, tier, status: status!, interval, seats, periodEnd, cancelAtPeriodEnd, trialEnd, scheduleId: row.scheduleId, pendingChange: row.pendingChange, planVersion: row.planVersion };
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

  /** The subscription as a plan migration reads it (spec §17). */
  async moving(m: EntityManager, subscriptionId: string): Promise<MovingSubscription | undefined> {
    const [row] = await preparedQuery<MovingSubscription>(m, MOVING_SQL, [subscriptionId]);
    return row;
  }

  /** A plan migration's move of its version (spec §17): `now`, or from the end of its current period. */
  async moveVersion(m: EntityManager, subscriptionId: string, tier: string, version: number, at: 'now' | 'period_end'): Promise<void> {
    await preparedQuery(m, at === 'now' ? MOVE_NOW_SQL : MOVE_AT_PERIOD_END_SQL, [subscriptionId, tier, version]);
  }
}
