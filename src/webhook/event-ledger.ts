import { EntityManager } from 'typeorm';
import { LedgerStatus, ProviderEvent } from '../provider/provider-event';
import { lockProviderIds } from '../subscriptions/provider-locks';
import { HandlerOutcome } from './event-handler';
import { parseEvent } from './event-parsing';
import { EventSource } from './webhook-event.entity';
import {
  countRedelivery,
  insertEvent,
  LedgerOutcome,
  readClaim,
  unmatchedPayloads,
  updateOutcome,
} from './webhook-ledger.repository';

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
 * for an event with no customer or subscription id: no lock orders the two). The dispatcher rolls this
 * delivery back, with everything it did, and runs it again: then the claim finds the row.
 */
export class ClaimLost extends Error {
  constructor(id: string) {
    super(`event ${id} was stored by a concurrent delivery`);
  }
}

/**
 * The start of every delivery's transaction: takes the event's provider id locks (see `lockProviderIds`: an
 * event that finds no organisation and one that links that id cannot interleave, so an unmatched event is either
 * seen by the linking transaction or committed after it and matched directly), then, in
 * the next statement (so in a snapshot taken once the locks are held), reads whether the ledger has the
 * event's id and whether unmatched events of its ids wait; it writes nothing. A new event's row is
 * written once, with its outcome, by `recordEvent` at the end of the transaction, rather than inserted
 * here and updated there (a second row version, in every index, in the WAL: measured, see docs/performance.md). A row
 * that exists is locked and counted by `countRedelivery`, which sees its latest version: a second delivery
 * never applies an event twice, on any instance. Under the locks no unmatched event of these ids can be
 * added before this transaction ends, so `waiting` holds until then.
 */
export async function claimEvent(manager: EntityManager, event: ProviderEvent, providerIds: (string | undefined)[]): Promise<Claim> {
  await lockProviderIds(manager, providerIds);
  const ids = providerIds.filter((id): id is string => !!id);
  const { stored, waiting } = await readClaim(manager, event.id, ids);
  if (!stored) return { kind: 'new', waiting };
  const row = await countRedelivery(manager, event.id, RETRYABLE);
  if (RETRYABLE.includes(row.status)) return { kind: 'retry', storedPayload: row.payload! };
  return { kind: 'duplicate', status: row.status };
}

/**
 * Writes a new event's row, once, with its outcome (claim `new`). `payload` is the event as received (JSON
 * text). Throws `ClaimLost` when a concurrent delivery of the same id stored it first.
 */
export async function recordEvent(
  manager: EntityManager,
  event: ProviderEvent,
  payload: string,
  source: EventSource,
  outcome: HandlerOutcome,
): Promise<void> {
  const row = { id: event.id, type: event.type, created: event.created, livemode: event.livemode, payload, source, ...ledgerOutcome(outcome) };
  if (!(await insertEvent(manager, row))) throw new ClaimLost(event.id);
}

/** Records the outcome of an event already in the ledger (a retry, or an unmatched event now matched). */
export async function finishEvent(manager: EntityManager, id: string, outcome: HandlerOutcome): Promise<void> {
  await updateOutcome(manager, id, ledgerOutcome(outcome));
}

function ledgerOutcome(outcome: HandlerOutcome): LedgerOutcome {
  return {
    status: outcome.status,
    reason: outcome.reason ?? null,
    organisationId: outcome.organisationId ?? null,
    customerId: outcome.customerId ?? null,
    subscriptionId: outcome.subscriptionId ?? null,
  };
}

/** Unmatched events of a customer or subscription, oldest first (created, then event precedence), locked. */
export async function unmatchedEvents(
  manager: EntityManager,
  customerId: string | undefined,
  subscriptionId: string | undefined,
): Promise<ProviderEvent[]> {
  if (!customerId && !subscriptionId) return [];
  const payloads = await unmatchedPayloads(manager, customerId ?? null, subscriptionId ?? null);
  return payloads.map((payload) => parseEvent(payload));
}
