import { EntityManager } from 'typeorm';
import { EVENT_RANK, ProviderEvent } from '../billing/provider-event';
import { preparedQuery } from '../database/prepared';
import { HandlerOutcome } from './event-handler';
import { lockKeys, takeLocksSql } from './organisation-links';
import { parseEvent } from './provider-event';
import { EventSource, LedgerStatus } from './webhook-event.entity';

/** Statuses a redelivery or `events:replay` runs again: the event had no effect yet. */
export const RETRYABLE: readonly LedgerStatus[] = ['failed', 'unmatched'];

export type Claim =
  | { kind: 'new' }
  /** A redelivery (or replay) of an event that had no effect yet: apply the payload stored with it. */
  | { kind: 'retry'; storedPayload: string }
  | { kind: 'duplicate'; status: LedgerStatus };

/**
 * The first statement of every delivery's transaction. It takes the event's advisory locks (see
 * `lockKeys`) before the ledger insert: a second delivery of the same id waits on those locks, or on
 * the primary key when it has none, until the first commits, then sees the row here. A delivery then
 * never holds its ledger row while waiting for a lock. The row starts as `failed` and is finished by
 * `finishEvent` before commit, so nobody sees that value unless the handler really failed. A redelivery
 * only counts itself (`attempts`) and keeps the payload first stored: `attempts` 1 means this delivery
 * inserted the row. `payload` is the event as received (JSON text).
 */
export async function claimEvent(
  manager: EntityManager,
  event: ProviderEvent,
  payload: string,
  providerIds: (string | undefined)[],
  source: EventSource,
): Promise<Claim> {
  const [row] = await preparedQuery<{ status: LedgerStatus; attempts: number; stored: string | null }>(
    manager,
    `INSERT INTO webhook_events (id, type, created, livemode, payload, status, source)
     SELECT $1, $2, $3::bigint, $4::boolean, $5, 'failed', $7 FROM (${takeLocksSql('$6')}) AS locked
     ON CONFLICT (id) DO UPDATE SET attempts = webhook_events.attempts + 1, last_received_at = now()
     RETURNING status, attempts,
       CASE WHEN attempts > 1 AND status IN ('failed', 'unmatched') THEN payload END AS stored`,
    [event.id, event.type, event.created, event.livemode, payload, lockKeys(providerIds), source],
  );
  if (row.attempts === 1) return { kind: 'new' };
  return RETRYABLE.includes(row.status) ? { kind: 'retry', storedPayload: row.stored! } : { kind: 'duplicate', status: row.status };
}

/**
 * Records the outcome. When the outcome linked provider ids to an organisation, it also tells whether
 * unmatched events of those ids wait (under the event's advisory locks none can be added before commit).
 */
export async function finishEvent(manager: EntityManager, id: string, outcome: HandlerOutcome): Promise<{ waiting: boolean }> {
  const [row] = await preparedQuery<{ waiting: boolean }>(
    manager,
    `UPDATE webhook_events SET status = $2, reason = $3, organisation_id = $4, customer_id = $5,
       subscription_id = $6, processed_at = now()
     WHERE id = $1
     RETURNING $7::boolean AND EXISTS (
       SELECT 1 FROM webhook_events w WHERE w.status = 'unmatched' AND w.id <> $1
         AND (w.customer_id = $5 OR w.subscription_id = $6)) AS waiting`,
    [
      id,
      outcome.status,
      outcome.reason?.slice(0, 1000) ?? null,
      outcome.organisationId ?? null,
      outcome.customerId ?? null,
      outcome.subscriptionId ?? null,
      outcome.linked !== undefined,
    ],
  );
  return { waiting: row.waiting };
}

// EVENT_RANK in SQL (events of other types last).
const RANK_SQL = `CASE type ${Object.entries(EVENT_RANK)
  .map(([type, rank]) => `WHEN '${type}' THEN ${rank}`)
  .join(' ')} ELSE ${Object.keys(EVENT_RANK).length + 1} END`;

/** Unmatched events of a customer or subscription, oldest first (created, then event precedence), locked. */
export async function unmatchedEvents(
  manager: EntityManager,
  customerId: string | undefined,
  subscriptionId: string | undefined,
): Promise<ProviderEvent[]> {
  if (!customerId && !subscriptionId) return [];
  const rows = await preparedQuery<{ payload: string }>(
    manager,
    `SELECT payload FROM webhook_events
     WHERE status = 'unmatched' AND (customer_id = $1 OR subscription_id = $2)
     ORDER BY created, ${RANK_SQL}, received_at
     FOR UPDATE`,
    [customerId ?? null, subscriptionId ?? null],
  );
  return rows.map((r) => parseEvent(r.payload));
}

export interface LedgerEntry {
  id: string;
  type: string;
  created: number;
  livemode: boolean;
  status: LedgerStatus;
  reason: string | null;
  organisation_id: string | null;
  customer_id: string | null;
  subscription_id: string | null;
  source: EventSource;
  attempts: number;
  received_at: string;
  processed_at: string | null;
}

const ENTRY_COLUMNS = `id, type, created, livemode, status, reason, organisation_id, customer_id, subscription_id,
  source, attempts, received_at, processed_at`;

/** The ids of these events that the ledger already holds (one statement for a whole batch). */
export async function knownEventIds(manager: EntityManager, ids: string[]): Promise<Set<string>> {
  const rows = await manager.query(`SELECT id FROM webhook_events WHERE id = ANY($1)`, [ids]);
  return new Set(rows.map((r: { id: string }) => r.id));
}

/** Newest first, for the operator. */
export async function listEvents(manager: EntityManager, status: LedgerStatus | undefined, limit: number): Promise<LedgerEntry[]> {
  const rows = await preparedQuery<LedgerEntry & { received_at: Date; processed_at: Date | null }>(
    manager,
    `SELECT ${ENTRY_COLUMNS} FROM webhook_events WHERE ($1::text IS NULL OR status = $1)
     ORDER BY received_at DESC, id LIMIT $2`,
    [status ?? null, limit],
  );
  return rows.map((r) => ({
    ...r,
    received_at: new Date(r.received_at).toISOString(),
    processed_at: r.processed_at ? new Date(r.processed_at).toISOString() : null,
  }));
}

export async function storedPayload(manager: EntityManager, id: string): Promise<string | undefined> {
  const [row] = await preparedQuery<{ payload: string }>(manager, `SELECT payload FROM webhook_events WHERE id = $1`, [id]);
  return row?.payload;
}
