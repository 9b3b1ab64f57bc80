import { DiscoveryService } from '@nestjs/core';
import { EntityManager } from 'typeorm';
import { ProviderEvent } from '../billing/provider-event';
import { LedgerStatus } from './webhook-event.entity';

/**
 * Marks a provider (an @Injectable class implementing EventHandler) as the handler of one event type:
 * `@HandlesEvent('invoice.paid')`. The dispatcher finds handlers through Nest's DiscoveryService, so a new
 * event kind is one new class listed in WebhookModule's providers, and no list of types to keep in step.
 */
export const HandlesEvent = DiscoveryService.createDecorator<string>();

/** What handling an event did; the dispatcher writes it to the ledger row in the same transaction. */
export interface HandlerOutcome {
  status: Exclude<LedgerStatus, 'duplicate'>;
  reason?: string;
  organisationId?: string;
  customerId?: string;
  subscriptionId?: string;
  /**
   * The event changed one of the organisation's subscriptions, from which its license is derived: only then
   * may the license have changed (the dispatcher asks notifications to compare).
   */
  subscriptionApplied?: boolean;
  /**
   * Provider ids now tied to an organisation: unmatched events waiting for them are applied next. They are
   * among the event's `providerIds`: the claim, which locked those, also found whether any wait.
   */
  linked?: { customerId?: string; subscriptionId?: string };
}

/**
 * Handles one event type. Runs inside the ledger's transaction (`manager`) and validates before it writes
 * anything; it changes other modules' tables only through their services, passing `manager` along.
 */
export interface EventHandler {
  /** The customer and subscription ids the event touches: the dispatcher locks them before `handle`. */
  providerIds(event: ProviderEvent): (string | undefined)[];
  handle(manager: EntityManager, event: ProviderEvent): Promise<HandlerOutcome>;
  /**
   * Optional: the event's common case as SQL that the ledger runs with the event's row in one statement
   * (`inOneStatement` in event-ledger.ts), so that a delivery's effect and row are one statement; undefined when the event
   * needs `handle`. It must do exactly what `handle` would do in that case, and nothing at all otherwise:
   * the dispatcher then calls `handle`.
   */
  inOneStatement?(event: ProviderEvent): OneStatement | undefined;
}

/**
 * CTEs, with their own parameters `$1`…`$n` (`values`). They may read the CTE `fresh` (one row when the
 * ledger has no row of the event and no unmatched event of its ids waits, else none), and every write of
 * theirs must depend on it. The last one is named `effect`: one row (`organisation_id`, `status`,
 * `reason`) when they applied the event, none when they changed nothing (not their case).
 */
export interface OneStatement {
  ctes: string;
  values: unknown[];
  /** The event's ids, for its ledger row (as `HandlerOutcome`'s). */
  customerId?: string;
  subscriptionId?: string;
  /** The statement may change a subscription, so the license (the dispatcher then lets `handle` notify). */
  changesLicense: boolean;
}

/** Why an event of ours cannot be applied (yet): the first word of a `failed` ledger reason. */
export type FailureCode =
  | 'invalid_event'
  | 'invoice_invalid'
  | 'tier_unresolvable'
  | 'organisation_conflict'
  | 'created_in_future';

/**
 * An event of ours that cannot be applied: stored `failed` with the reason and answered 200 (a 4xx would
 * make the provider retry it for days and then disable the endpoint). `events:replay` applies it once the
 * cause is fixed.
 */
export function failed(code: FailureCode, reason: string, ids: Partial<HandlerOutcome> = {}): HandlerOutcome {
  return { ...ids, status: 'failed', reason: `${code}: ${reason}` };
}

/** Joins optional notes into one ledger reason. */
export function reasons(...parts: (string | undefined)[]): string | undefined {
  const text = parts.filter(Boolean).join('; ');
  return text || undefined;
}
