import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';

/** Statuses in which a subscription still bills (or is about to): a second checkout would pay twice. */
export const BILLING_STATUSES = ['active', 'trialing', 'past_due', 'unpaid', 'incomplete'] as const;

/**
 * What an applied event changes on a stored subscription (`s`), given the event's values (EXCLUDED).
 * `past_due_since` is the `created` of the first event showing past_due after another status: later
 * retries do not restart grace.
 */
const UPSERT_SET = `tier = COALESCE(EXCLUDED.tier, s.tier), status = EXCLUDED.status,
  current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
  past_due_since = CASE WHEN EXCLUDED.status = 'past_due'
                        THEN CASE WHEN s.status = 'past_due' AND s.past_due_since IS NOT NULL THEN s.past_due_since
                                  ELSE EXCLUDED.last_event_created END END,
  last_event_created = GREATEST(s.last_event_created, EXCLUDED.last_event_created),
  last_event_rank = CASE WHEN EXCLUDED.last_event_created >= s.last_event_created OR s.last_event_created IS NULL
                         THEN EXCLUDED.last_event_rank ELSE s.last_event_rank END,
  deleted_event_created = CASE WHEN EXCLUDED.deleted_event_created IS NOT NULL THEN EXCLUDED.last_event_created END,
  updated_at = now()`;

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

/** What a subscription event says about its subscription. */
export interface SubscriptionChange {
  kind: 'created' | 'updated' | 'deleted';
  /** The event's `created` and rank (created 1 < updated 2 < deleted 3). */
  created: number;
  rank: number;
  /** The resolved paid tier; undefined keeps the stored one (a deletion needs none). */
  tier?: string;
  status: string | null;
  periodStart: number | null;
  periodEnd: number | null;
}

/**
 * What the reconciliation compares with the provider. Seats and the pending change (SPEC 11) join here
 * when they are stored: `drifted` compares every field, and the sync reads them in `providerState`.
 */
export interface DriftState {
  tier: string | null;
  status: string | null;
  periodStart: number | null;
  periodEnd: number | null;
}

/** What the provider says of a subscription now; an unresolved `tier` keeps the stored one. */
export type ProviderState = Omit<DriftState, 'tier'> & { tier?: string };

/** A stored subscription that is not deleted, with what the reconciliation compares. */
export interface StoredSubscription {
  id: string;
  organisationId: string;
  customerId: string | null;
  state: DriftState;
}

/** The state a subscription should have when it drifted from what the provider says, else undefined. */
export function drifted(stored: DriftState, now: ProviderState): DriftState | undefined {
  const after: DriftState = { tier: now.tier ?? stored.tier, status: now.status, periodStart: now.periodStart, periodEnd: now.periodEnd };
  return JSON.stringify(stored) === JSON.stringify(after) ? undefined : after;
}

const STORED_COLUMNS = 'subscription_id, organisation_id, customer_id, tier, status, current_period_start, current_period_end';

function storedSubscription(row: Record<string, any>): StoredSubscription {
  return {
    id: row.subscription_id,
    organisationId: row.organisation_id,
    customerId: row.customer_id,
    state: { tier: row.tier, status: row.status, periodStart: row.current_period_start, periodEnd: row.current_period_end },
  };
}

export type ApplyResult =
  | { outcome: 'applied' }
  | { outcome: 'stale'; reason: string }
  /** An `.updated` with the same `created` as the last one applied: ask the provider which is current. */
  | { outcome: 'tie' };

/**
 * The provider subscriptions tied to an organisation (table provider_subscriptions), each with its state
 * in event order. Only this class writes the table; the license is derived from it (see subscriptionSql).
 * Every method runs in the caller's transaction (`manager`); the webhook holds the subscription id's
 * advisory lock meanwhile, so events of one subscription take turns across instances.
 */
@Injectable()
export class ProviderSubscriptions {
  async find(manager: EntityManager, subscriptionId: string): Promise<KnownSubscription | undefined> {
    const [row] = await preparedQuery<KnownSubscription>(
      manager,
      `SELECT organisation_id AS "organisationId", customer_id AS "customerId", tier, status,
              past_due_since AS "pastDueSince", last_event_created AS "lastEventCreated",
              last_event_rank AS "lastEventRank", deleted_event_created IS NOT NULL AS deleted
       FROM provider_subscriptions WHERE subscription_id = $1`,
      [subscriptionId],
    );
    return row;
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
    // A new row's past_due_since; a stored one's is kept or set by UPSERT_SET.
    const pastDueSince = change.status === 'past_due' ? change.created : null;
    await preparedQuery(
      manager,
      `INSERT INTO provider_subscriptions AS s (subscription_id, organisation_id, customer_id, tier, status,
         current_period_start, current_period_end, past_due_since, last_event_created, last_event_rank,
         deleted_event_created)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11 THEN $9::bigint END)
       ON CONFLICT (subscription_id) DO UPDATE SET ${UPSERT_SET}`,
      [
        subscription.id,
        subscription.organisationId,
        subscription.customerId ?? null,
        change.tier ?? null,
        change.status,
        change.periodStart,
        change.periodEnd,
        pastDueSince,
        change.created,
        change.rank,
        change.kind === 'deleted',
      ],
    );
    return { outcome: 'applied' };
  }

  /** A page of the subscriptions not deleted, by id after `afterId`: the reconciliation's known ones. */
  async listNotDeleted(manager: EntityManager, afterId: string | undefined, limit: number): Promise<StoredSubscription[]> {
    const rows = await manager.query(
      `SELECT ${STORED_COLUMNS} FROM provider_subscriptions
       WHERE deleted_event_created IS NULL AND ($1::text IS NULL OR subscription_id > $1) ORDER BY subscription_id LIMIT $2`,
      [afterId ?? null, limit],
    );
    return rows.map(storedSubscription);
  }

  /** Those of `ids` stored and not deleted, by id: what the reconciliation compares with a page of the provider's. */
  async findNotDeleted(manager: EntityManager, ids: string[]): Promise<Map<string, StoredSubscription>> {
    const rows = await manager.query(
      `SELECT ${STORED_COLUMNS} FROM provider_subscriptions WHERE subscription_id = ANY($1) AND deleted_event_created IS NULL`,
      [ids],
    );
    return new Map(rows.map((r: Record<string, any>) => [r.subscription_id, storedSubscription(r)]));
  }

  /**
   * Brings a subscription to what the provider says now (the reconciliation found it drifted). `asOf` (now)
   * becomes its last event time, so an older event arriving later cannot undo the correction. A
   * subscription the provider has canceled is deleted here too. Answers the state before and after when
   * something changed, else undefined.
   */
  async correct(
    manager: EntityManager,
    subscriptionId: string,
    now: ProviderState,
    asOf: number,
  ): Promise<{ before: DriftState; after: DriftState } | undefined> {
    const [row] = await manager.query(
      `SELECT tier, status, current_period_start, current_period_end, past_due_since FROM provider_subscriptions
       WHERE subscription_id = $1 AND deleted_event_created IS NULL`,
      [subscriptionId],
    );
    if (!row) return undefined;
    const before: DriftState = { tier: row.tier, status: row.status, periodStart: row.current_period_start, periodEnd: row.current_period_end };
    const after = drifted(before, now);
    if (!after) return undefined;
    const pastDueSince = after.status !== 'past_due' ? null : before.status === 'past_due' ? (row.past_due_since ?? asOf) : asOf;
    await manager.query(
      `UPDATE provider_subscriptions SET tier = $2, status = $3, current_period_start = $4, current_period_end = $5,
         past_due_since = $6, last_event_created = GREATEST(last_event_created, $7), last_event_rank = 2,
         deleted_event_created = CASE WHEN $3 = 'canceled' THEN $7::bigint END, updated_at = now()
       WHERE subscription_id = $1`,
      [subscriptionId, after.tier, after.status, after.periodStart, after.periodEnd, pastDueSince, asOf],
    );
    return { before, after };
  }

  /** The organisation's subscription that still bills, if any (for checkout: one at a time). */
  async billingSubscriptionOf(organisationId: string, manager: EntityManager): Promise<{ id: string; status: string } | undefined> {
    const [row] = await manager.query(
      `SELECT subscription_id, status FROM provider_subscriptions
       WHERE organisation_id = $1 AND deleted_event_created IS NULL AND status = ANY($2)
       ORDER BY last_event_created DESC NULLS LAST LIMIT 1`,
      [organisationId, BILLING_STATUSES],
    );
    return row && { id: row.subscription_id, status: row.status };
  }
}
