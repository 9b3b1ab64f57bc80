import { EntityManager } from 'typeorm';
import { EVENT_RANK } from '../subscriptions/event-order';
import { preparedQuery } from '../database/prepared';
import { EventSource } from './webhook-event.entity';
import { LedgerStatus } from '../provider/provider-event';

/**
 * Every query of the event ledger (`webhook_events`): the only file
 * with SQL for them. Each function runs in the caller's transaction (`manager`) and answers typed rows.
 * The rules (what a claim means, when an event is run again) are in event-ledger.ts.
 */

/** A ledger row for the operator (`events:list`). */
export interface LedgerEntry {
  id: string;
  type: string;
  created: number;
  livemode: boolean;
  status: LedgerStatus;
  reason: string | null;
  organisationId: string | null;
  customerId: string | null;
  subscriptionId: string | null;
  source: EventSource;
  attempts: number;
  receivedAt: string;
  processedAt: string | null;
}

/** What an event's handling decided, as written to its row. */
export interface LedgerOutcome {
  status: Exclude<LedgerStatus, 'duplicate'>;
  reason: string | null;
  organisationId: string | null;
  customerId: string | null;
  subscriptionId: string | null;
}

/** A new event's row. `payload` is the event as received (JSON text). */
export interface NewLedgerRow extends LedgerOutcome {
  id: string;
  type: string;
  created: number;
  livemode: boolean;
  payload: string;
  source: EventSource;
}

/** The ledger as SQL fragments, for other modules' one-statement reads. */
export const ledgerSql = {
  /**
   * The newest `limit` events of one subscription (by `created`, then arrival), whatever their outcome: id,
   * type, created, status, reason. Served by webhook_events_subscription_idx.
   */
  eventsOfSubscription: (subscriptionId: string, limit: number) => `
    SELECT id, type, created, status, reason FROM webhook_events
    WHERE subscription_id = ${subscriptionId}
    ORDER BY created DESC, received_at DESC LIMIT ${limit}`,
};

/** Whether the ledger has this event id, and whether unmatched events of these provider ids wait. */
export async function readClaim(manager: EntityManager, id: string, providerIds: string[]): Promise<{ stored: boolean; waiting: boolean }> {
  const [row] = await preparedQuery<{ stored: boolean; waiting: boolean }>(
    manager,
    `SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1) AS stored,
       EXISTS (SELECT 1 FROM webhook_events w WHERE w.status = 'unmatched' AND w.id <> $1
                 AND (w.customer_id = ANY($2::text[]) OR w.subscription_id = ANY($2::text[]))) AS waiting`,
    [id, providerIds],
  );
  return row;
}

/**
 * Counts a redelivery (or replay) of a stored event in `attempts` and locks its row until commit. Answers
 * its status, and its stored payload when `withPayloadIf` includes that status.
 */
export async function countRedelivery(
  manager: EntityManager,
  id: string,
  withPayloadIf: readonly LedgerStatus[],
): Promise<{ status: LedgerStatus; payload: string | null }> {
  const [row] = await preparedQuery<{ status: LedgerStatus; payload: string | null }>(
    manager,
    `UPDATE webhook_events SET attempts = attempts + 1, last_received_at = now() WHERE id = $1
     RETURNING status, CASE WHEN status = ANY($2::text[]) THEN payload END AS payload`,
    [id, withPayloadIf],
  );
  return row;
}

/**
 * Inserts a new event's row with its outcome. Answers false when a row of this id exists already (a
 * concurrent delivery stored it first): the insert then failed, and the transaction must roll back.
 */
export async function insertEvent(manager: EntityManager, row: NewLedgerRow): Promise<boolean> {
  try {
    await preparedQuery(
      manager,
      `INSERT INTO webhook_events (id, type, created, livemode, payload, source, status, reason, organisation_id,
         customer_id, subscription_id, processed_at)
       VALUES ($1, $2, $3::bigint, $4::boolean, $5, $6, $7, $8, $9, $10, $11, now())`,
      [row.id, row.type, row.created, row.livemode, row.payload, row.source, ...outcomeValues(row)],
    );
    return true;
  } catch (err) {
    if ((err as { constraint?: string }).constraint === 'webhook_events_pkey') return false;
    throw err;
  }
}

/** Records the outcome of an event already in the ledger (a retry, or an unmatched event now matched). */
export async function updateOutcome(manager: EntityManager, id: string, outcome: LedgerOutcome): Promise<void> {
  await preparedQuery(
    manager,
    `UPDATE webhook_events SET status = $2, reason = $3, organisation_id = $4, customer_id = $5,
       subscription_id = $6, processed_at = now()
     WHERE id = $1`,
    [id, ...outcomeValues(outcome)],
  );
}

function outcomeValues(outcome: LedgerOutcome): unknown[] {
  return [outcome.status, outcome.reason?.slice(0, 1000) ?? null, outcome.organisationId, outcome.customerId, outcome.subscriptionId];
}

// EVENT_RANK in SQL (events of other types last).
const RANK_SQL = `CASE type ${Object.entries(EVENT_RANK)
  .map(([type, rank]) => `WHEN '${type}' THEN ${rank}`)
  .join(' ')} ELSE ${Object.keys(EVENT_RANK).length + 1} END`;

/**
 * The payloads of the unmatched events of a customer or subscription, oldest first (created, then event
 * precedence), their rows locked.
 */
export async function unmatchedPayloads(manager: EntityManager, customerId: string | null, subscriptionId: string | null): Promise<string[]> {
  const rows = await preparedQuery<{ payload: string }>(
    manager,
    `SELECT payload FROM webhook_events
     WHERE status = 'unmatched' AND (customer_id = $1 OR subscription_id = $2)
     ORDER BY created, ${RANK_SQL}, received_at
     FOR UPDATE`,
    [customerId, subscriptionId],
  );
  return rows.map((r) => r.payload);
}

/** The ids of these events that the ledger already holds (one statement for a whole batch). */
export async function knownEventIds(manager: EntityManager, ids: string[]): Promise<Set<string>> {
  const rows = await preparedQuery<{ id: string }>(manager, `SELECT id FROM webhook_events WHERE id = ANY($1)`, [ids]);
  return new Set(rows.map((r) => r.id));
}

export async function storedPayload(manager: EntityManager, id: string): Promise<string | undefined> {
  const [row] = await preparedQuery<{ payload: string }>(manager, `SELECT payload FROM webhook_events WHERE id = $1`, [id]);
  return row?.payload;
}

/** Newest first, for the operator. */
export async function listEvents(manager: EntityManager, status: LedgerStatus | undefined, limit: number): Promise<LedgerEntry[]> {
  const rows = await preparedQuery<Omit<LedgerEntry, 'receivedAt' | 'processedAt'> & { receivedAt: Date; processedAt: Date | null }>(
    manager,
    `SELECT id, type, created, livemode, status, reason, organisation_id AS "organisationId", customer_id AS "customerId",
            subscription_id AS "subscriptionId", source, attempts, received_at AS "receivedAt", processed_at AS "processedAt"
     FROM webhook_events WHERE ($1::text IS NULL OR status = $1)
     ORDER BY received_at DESC, id LIMIT $2`,
    [status ?? null, limit],
  );
  return rows.map((r) => ({
    ...r,
    receivedAt: r.receivedAt.toISOString(),
    processedAt: r.processedAt ? r.processedAt.toISOString() : null,
  }));
}
