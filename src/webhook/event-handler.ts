import { DiscoveryService } from '@nestjs/core';
import { EntityManager } from 'typeorm';
import { z, ZodType } from 'zod';
import { LedgerStatus, ProviderEvent } from '../provider/provider-event';
import { SubscriptionObject } from '../provider/provider-objects';

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
export interface EventHandler<S extends ZodType<object> = ZodType<object>> {
  /**
   * The types of the fields of `data.object` that the handler reads (src/provider/provider-objects.ts): the
   * dispatcher stores an event whose fields have another type `failed` (`invalid_event`) without calling
   * `handle`, and hands the others on as that schema's type.
   */
  readonly schema: S;
  /** The customer and subscription ids the event touches: the dispatcher locks them before `handle`. */
  providerIds(event: ProviderEvent<z.output<S>>): (string | undefined)[];
  handle(manager: EntityManager, event: ProviderEvent<z.output<S>>, provider: ProviderAnswers): Promise<HandlerOutcome>;
}

/** What the provider said about a subscription, asked outside the transaction; or why it could not say. */
export type ProviderAnswer = { subscription: SubscriptionObject } | { error: string };

/**
 * The provider's answers a handler may use. A handler never waits on the provider inside the event's
 * transaction (a hung provider would hold a database connection): `subscription` answers what the
 * dispatcher fetched before this run of the transaction, or throws `ProviderAnswerNeeded`; the dispatcher
 * then rolls the transaction back, asks the provider with no transaction open, and runs the event again.
 */
export interface ProviderAnswers {
  subscription(subscriptionId: string): ProviderAnswer;
}

export class ProviderAnswerNeeded extends Error {
  constructor(readonly subscriptionId: string) {
    super(`the provider's subscription ${subscriptionId} is needed`);
  }
}

/** Why an event of ours cannot be applied (yet): the first word of a `failed` ledger reason. */
export type FailureCode =
  | 'invalid_event'
  | 'invoice_invalid'
  | 'tier_unresolvable'
  | 'organisation_conflict'
  | 'created_in_future'
  /** A paid credit pack that the tier table does not sell (any more), or whose grant it refuses: fix it, then replay. */
  | 'pack_unknown'
  /** The provider could not say what is current (a tie of two `.updated`): replay once it answers. */
  | 'provider_unavailable';

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
