import { EntityManager } from 'typeorm';
import { EVENT_RANK, ProviderEvent } from '../billing/provider-event';
import { preparedQuery } from '../database/prepared';
import { HandlerOutcome, OneStatement } from './event-handler';
import { lockProviderIds } from './organisation-links';
import { parseEvent } from './provider-event';
import { EventSource, LedgerStatus } from './webhook-event.entity';

/** Statuses a redelivery or `events:replay` runs again: the event had no effect yet. */
export const RETRYABLE: readonly LedgerStatus[] = ['failed', 'unmatched'];

export type Claim =
  /**
   * The ledger had no row of this id when the claim read it: `recordEvent` writes it with the outcome.
   * `waiting`: unmatched events of the locked ids wait to be applied once this event links them.
   */
  | { kind: 'new'; waiting: boolean }
  /** A redelivery (or replay) of an event that had no effect yet: apply the payload stored with it. */
  | { kind: 'retry'; storedPayload: string }
  | { kind: 'duplicate'; status: LedgerStatus };

/**
 * Thrown by `recordEvent` when a concurrent delivery of the same event id stored it first (possible only
 * for an event with no customer or subscription id: no lock orders the two), or by a handler that finds so
 * (`appliedMeanwhile`). The dispatcher rolls this delivery back, with everything it did, and runs it
 * again: then the claim finds the row.
 */
export class ClaimLost extends Error {
  constructor(id: string) {
    super(`event ${id} was stored by a concurrent delivery`);
  }
}

/**
 * The start of every delivery's transaction: it takes the event's advisory locks (see `lockKeys`) in a
 * statement of its own, then, in the next statement (so in a snapshot taken once the locks are held), reads whether the ledger has the event's id and whether unmatched events of its ids
 * wait; it writes nothing. A new event's row is written once, with its outcome, by `recordEvent` at the end
 * of the transaction, rather than inserted here and updated there (a second row version, in every index,
 * in the WAL: measured, see README). A row that exists is locked and counted by `countRedelivery`, which
 * sees its latest version: a second delivery never applies an event twice, on any instance. `attempts` 1
 * means no other delivery reached the row. Under the locks no unmatched event of these ids can be added
 * before this transaction ends, so `waiting` holds until then.
 */
export async function claimEvent(
  manager: EntityManager,
  event: ProviderEvent,
  providerIds: (string | undefined)[],
): Promise<Claim> {
  await lockProviderIds(manager, providerIds);
  const ids = providerIds.filter(Boolean);
  const [row] = await preparedQuery<{ stored: boolean; waiting: boolean }>(
    manager,
    `SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1) AS stored,
       EXISTS (SELECT 1 FROM webhook_events w WHERE w.status = 'unmatched' AND w.id <> $1
                 AND (w.customer_id = ANY($2::text[]) OR w.subscription_id = ANY($2::text[]))) AS waiting`,
    [event.id, ids],
  );
  return row.stored ? countRedelivery(manager, event.id) : { kind: 'new', waiting: row.waiting };
}

/**
 * A new event's whole delivery in one statement, after the event's advisory locks (a statement of their
 * own, so this one reads once they are held): the handler's CTEs (`OneStatement`) apply the event's common case and the ledger row is written from their
 * `effect`. Answers the stored status and reason, or undefined when nothing was written (the ledger knows
 * the event, unmatched events of its ids wait, or the handler's case did not hold): the caller then takes
 * the general path, in a transaction of its own. Throws `ClaimLost` like `recordEvent`.
 */
export async function inOneStatement(
  manager: EntityManager,
  event: ProviderEvent,
  payload: string,
  source: EventSource,
  providerIds: (string | undefined)[],
  effect: OneStatement,
): Promise<{ status: LedgerStatus; reason: string | null } | undefined> {
  const ids = providerIds.filter((id): id is string => !!id);
  await lockProviderIds(manager, ids);
  try {
    const [row] = await preparedQuery<{ status: LedgerStatus; reason: string | null }>(
      manager,
      oneStatementText(effect),
      [
        ...effect.values,
        event.id,
        event.type,
        event.created,
        event.livemode,
        payload,
        source,
        effect.customerId ?? null,
        effect.subscriptionId ?? null,
        ids,
      ],
    );
    return row;
  } catch (err) {
    if ((err as { constraint?: string }).constraint === 'webhook_events_pkey') throw new ClaimLost(event.id);
    throw err;
  }
}

// The whole statement's text per handler's CTEs (which always take the same number of values), built once
// rather than on every delivery: it is also the key of its prepared statement.
const oneStatementTexts = new Map<string, string>();

function oneStatementText(effect: OneStatement): string {
  let text = oneStatementTexts.get(effect.ctes);
  if (text === undefined) {
    // The ledger's parameters follow the handler's.
    const $ = (i: number) => `$${effect.values.length + i}`;
    text = `WITH fresh AS (
       SELECT true AS fresh WHERE NOT EXISTS (SELECT 1 FROM webhook_events WHERE id = ${$(1)})
         AND NOT EXISTS (SELECT 1 FROM webhook_events w WHERE w.status = 'unmatched' AND w.id <> ${$(1)}
                           AND (w.customer_id = ANY(${$(9)}::text[]) OR w.subscription_id = ANY(${$(9)}::text[])))
     ),
     ${effect.ctes},
     ledger AS (
       INSERT INTO webhook_events (id, type, created, livemode, payload, source, status, reason, organisation_id,
         customer_id, subscription_id, processed_at)
       SELECT ${$(1)}, ${$(2)}, ${$(3)}::bigint, ${$(4)}::boolean, ${$(5)}, ${$(6)}, effect.status, left(effect.reason, 1000),
         effect.organisation_id, ${$(7)}, ${$(8)}, now()
       FROM effect RETURNING status, reason
     )
     SELECT status, reason FROM ledger`;
    oneStatementTexts.set(effect.ctes, text);
  }
  return text;
}

/** A redelivery or replay of a stored event: counted in `attempts`, its row locked until commit. */
async function countRedelivery(manager: EntityManager, id: string): Promise<Claim> {
  const [row] = await preparedQuery<{ status: LedgerStatus; stored: string | null }>(
    manager,
    `UPDATE webhook_events SET attempts = attempts + 1, last_received_at = now() WHERE id = $1
     RETURNING status, CASE WHEN status IN ('failed', 'unmatched') THEN payload END AS stored`,
    [id],
  );
  if (RETRYABLE.includes(row.status)) return { kind: 'retry', storedPayload: row.stored! };
  return { kind: 'duplicate', status: row.status };
}

/**
 * `waiting`, answered with the outcome: when the outcome linked ids to an organisation, whether unmatched
 * events of those ids wait (under the event's advisory locks none can be added before commit).
 */
const WAITING_SQL = (id: string, customer: string, subscription: string, linked: string) => `${linked}::boolean AND EXISTS (
  SELECT 1 FROM webhook_events w WHERE w.status = 'unmatched' AND w.id <> ${id}
    AND (w.customer_id = ${customer} OR w.subscription_id = ${subscription}))`;

/**
 * Writes a new event's row, once, with its outcome (claim `new`). `payload` is the event as received (JSON text). Throws
 * `ClaimLost` when a concurrent delivery of the same id stored it first: the insert then fails, so nothing
 * of this delivery commits.
 */
export async function recordEvent(
  manager: EntityManager,
  event: ProviderEvent,
  payload: string,
  source: EventSource,
  outcome: HandlerOutcome,
): Promise<void> {
  try {
    await preparedQuery(
      manager,
      `INSERT INTO webhook_events (id, type, created, livemode, payload, source, status, reason, organisation_id,
         customer_id, subscription_id, processed_at)
       VALUES ($1, $2, $3::bigint, $4::boolean, $5, $6, $7, $8, $9, $10, $11, now())`,
      [event.id, event.type, event.created, event.livemode, payload, source, ...outcomeValues(outcome).slice(0, 5)],
    );
  } catch (err) {
    if ((err as { constraint?: string }).constraint === 'webhook_events_pkey') throw new ClaimLost(event.id);
    throw err;
  }
}

/**
 * Whether another delivery of this event applied it after this delivery's claim read the ledger: asked, in
 * a statement of its own, before a handler asks the provider anything on a duplicate's behalf. The claim
 * reads under the event's locks, so for an event with ids this is a guard, not a path (one statement, on a
 * tie only). An `unmatched` or `failed` row had no effect, so it does not count.
 */
export async function appliedMeanwhile(manager: EntityManager, id: string): Promise<boolean> {
  const [row] = await preparedQuery<{ applied: boolean }>(
    manager,
    `SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1 AND status NOT IN ('failed', 'unmatched')) AS applied`,
    [id],
  );
  return row.applied;
}

/** Records the outcome of an event already in the ledger (a retry, or an unmatched event now matched). */
export async function finishEvent(manager: EntityManager, id: string, outcome: HandlerOutcome): Promise<{ waiting: boolean }> {
  const [row] = await preparedQuery<{ waiting: boolean }>(
    manager,
    `UPDATE webhook_events SET status = $2, reason = $3, organisation_id = $4, customer_id = $5,
       subscription_id = $6, processed_at = now()
     WHERE id = $1
     RETURNING ${WAITING_SQL('$1', '$5', '$6', '$7')} AS waiting`,
    [id, ...outcomeValues(outcome)],
  );
  return { waiting: row.waiting };
}

/** status, reason, organisation, customer, subscription, and whether the outcome linked ids. */
function outcomeValues(outcome: HandlerOutcome): unknown[] {
  return [
    outcome.status,
    outcome.reason?.slice(0, 1000) ?? null,
    outcome.organisationId ?? null,
    outcome.customerId ?? null,
    outcome.subscriptionId ?? null,
    outcome.linked !== undefined,
  ];
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
