import { HandlerOutcome } from './event-handler';
import { lockKeys, takeLocksSql } from './organisation-links';
import { ProviderEvent } from './provider-event';
import { Sql } from './transaction';
import { LedgerStatus } from './webhook-event.entity';

/** Statuses a redelivery or `events:replay` runs again: the event had no effect yet. */
export const RETRYABLE: readonly LedgerStatus[] = ['failed', 'unmatched'];

export type Claim = { kind: 'new' | 'retry' } | { kind: 'duplicate'; status: LedgerStatus };

/**
 * The first statement of every delivery's transaction. It takes the event's advisory locks (see
 * `lockKeys`) before the ledger insert: a second delivery of the same id waits on those locks, or on
 * the primary key when it has none, until the first commits, then sees the row here. A delivery then
 * never holds its ledger row while waiting for a lock. The row starts as `failed` and is finished by
 * `finishEvent` before commit, so nobody sees that value unless the handler really failed. A redelivery
 * only counts itself (`attempts`): `attempts` 1 means this delivery inserted the row.
 */
export async function claimEvent(sql: Sql, event: ProviderEvent, providerIds: (string | undefined)[]): Promise<Claim> {
  const [row] = await sql<{ status: LedgerStatus; attempts: number }>(
    `INSERT INTO webhook_events (id, type, created, livemode, payload, status)
     SELECT $1, $2, $3::bigint, $4::boolean, $5::jsonb, 'failed' FROM (${takeLocksSql('$6')}) AS locked
     ON CONFLICT (id) DO UPDATE SET attempts = webhook_events.attempts + 1, last_received_at = now()
     RETURNING status, attempts`,
    [event.id, event.type, event.created, event.livemode, JSON.stringify(event), lockKeys(providerIds)],
  );
  if (row.attempts === 1) return { kind: 'new' };
  return RETRYABLE.includes(row.status) ? { kind: 'retry' } : { kind: 'duplicate', status: row.status };
}

export async function finishEvent(sql: Sql, id: string, outcome: HandlerOutcome): Promise<void> {
  await sql(
    `UPDATE webhook_events SET status = $2, reason = $3, organisation_id = $4, customer_id = $5,
       subscription_id = $6, processed_at = now()
     WHERE id = $1`,
    [
      id,
      outcome.status,
      outcome.reason?.slice(0, 1000) ?? null,
      outcome.organisationId ?? null,
      outcome.customerId ?? null,
      outcome.subscriptionId ?? null,
    ],
  );
}

/** Unmatched events of a customer or subscription, oldest first (created, then event precedence), locked. */
export async function unmatchedEvents(
  sql: Sql,
  customerId: string | undefined,
  subscriptionId: string | undefined,
): Promise<ProviderEvent[]> {
  if (!customerId && !subscriptionId) return [];
  const rows = await sql<{ payload: ProviderEvent }>(
    `SELECT payload FROM webhook_events
     WHERE status = 'unmatched' AND (customer_id = $1 OR subscription_id = $2)
     ORDER BY created, CASE type WHEN 'customer.subscription.created' THEN 1
       WHEN 'customer.subscription.updated' THEN 2 WHEN 'customer.subscription.deleted' THEN 3 ELSE 4 END, received_at
     FOR UPDATE`,
    [customerId ?? null, subscriptionId ?? null],
  );
  return rows.map((r) => r.payload);
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
  attempts: number;
  received_at: string;
  processed_at: string | null;
}

const ENTRY_COLUMNS = `id, type, created, livemode, status, reason, organisation_id, customer_id, subscription_id,
  attempts, received_at, processed_at`;

/** Newest first, for the operator. */
export async function listEvents(sql: Sql, status: LedgerStatus | undefined, limit: number): Promise<LedgerEntry[]> {
  const rows = await sql<LedgerEntry & { received_at: Date; processed_at: Date | null }>(
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

export async function storedPayload(sql: Sql, id: string): Promise<ProviderEvent | undefined> {
  const [row] = await sql<{ payload: ProviderEvent }>(`SELECT payload FROM webhook_events WHERE id = $1`, [id]);
  return row?.payload;
}
