import { LedgerStatus } from './webhook-event.entity';
import { ProviderEvent } from './provider-event';
import { Sql } from './transaction';

/** What handling an event did; the dispatcher writes it to the ledger row in the same transaction. */
export interface HandlerOutcome {
  status: Exclude<LedgerStatus, 'duplicate'>;
  reason?: string;
  organisationId?: string;
  customerId?: string;
  subscriptionId?: string;
  /** Answer this 4xx after the ledger row (status failed) is committed. */
  rejection?: { code: string; message: string };
  /** Provider ids now tied to an organisation, with unmatched events waiting for them: apply those. */
  linked?: { customerId?: string; subscriptionId?: string };
}

/** Handles one event type. Runs inside the ledger transaction; validates before it writes anything. */
export abstract class EventHandler {
  abstract readonly type: string;
  /** The customer and subscription ids the event touches: the dispatcher locks them before `handle`. */
  abstract providerIds(event: ProviderEvent): (string | undefined)[];
  abstract handle(sql: Sql, event: ProviderEvent): Promise<HandlerOutcome>;
}

/** An event whose content we cannot use: stored as failed, answered 400 (the provider may retry). */
export function failed(code: string, reason: string, ids: Partial<HandlerOutcome> = {}): HandlerOutcome {
  return { ...ids, status: 'failed', reason, rejection: { code, message: `The event cannot be applied: ${reason}.` } };
}

/** Joins optional notes into one ledger reason. */
export function reasons(...parts: (string | undefined)[]): string | undefined {
  const text = parts.filter(Boolean).join('; ');
  return text || undefined;
}
