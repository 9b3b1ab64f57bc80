import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { LedgerStatus, ProviderEvent } from '../provider/provider-event';
import { AppException } from '../common/app-exception';
import { transaction } from '../database/transaction';
import { webhookEvents } from '../common/metrics';
import { AppConfig } from '../config/app-config';
import { lockProviderIds } from '../subscriptions/provider-locks';
import { PaymentProvider } from '../provider/payment-provider.port';
import { subscriptionSchema, wrongTypes } from '../provider/provider-objects';
import { SubscriptionChangeOutcomes } from '../subscriptions/change-outcomes';
import { LicenseChanges } from '../subscriptions/license-changes.port';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, ProviderAnswer, ProviderAnswerNeeded, ProviderAnswers } from './event-handler';
import { claimEvent, ClaimLost, finishEvent, recordEvent, unmatchedEvents } from './event-ledger';
import { parseEvent } from './event-parsing';
import { storedPayload } from './webhook-ledger.repository';
import { EventSource } from './webhook-event.entity';

export interface DispatchResult {
  id: string;
  status: LedgerStatus;
  reason: string | null;
}

interface Applied {
  event: ProviderEvent;
  outcome: HandlerOutcome;
}

/**
 * Runs each event in one transaction: lock the event's customer and subscription ids and read its ledger
 * row, pick the handler for its type (registered with @HandlesEvent), check the types of the fields it
 * reads, write the ledger row with the outcome (once), and apply the unmatched events that this event's
 * links made matchable. A redelivery of an event that had no effect yet (unmatched, failed) applies the
 * payload stored first, whatever body came with it. The provider is never asked inside the transaction
 * (`withProviderAnswers`). Metrics and logs are written only after the commit, so they never count what
 * was not stored.
 */
@Injectable()
export class EventDispatcher implements OnModuleInit {
  private readonly logger = new Logger('Webhook');
  private readonly handlers = new Map<string, EventHandler>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly discovery: DiscoveryService,
    private readonly config: AppConfig,
    private readonly licenseChanges: LicenseChanges,
    private readonly provider: PaymentProvider,
    private readonly audit: AuditService,
    private readonly changeOutcomes: SubscriptionChangeOutcomes,
  ) {}

  onModuleInit() {
    for (const wrapper of this.discovery.getProviders({ metadataKey: HandlesEvent.KEY })) {
      const type = this.discovery.getMetadataByDecorator(HandlesEvent, wrapper)!;
      if (this.handlers.has(type)) throw new Error(`two handlers for event type ${type}`);
      this.handlers.set(type, wrapper.instance as EventHandler);
    }
  }

  /** The event types with a handler. */
  handledTypes(): string[] {
    return [...this.handlers.keys()];
  }

  /** `payload` is the event as received (its JSON text), stored in the ledger with how it arrived. */
  async dispatch(received: ProviderEvent, payload: string, source: EventSource = 'webhook', by?: AuditActor): Promise<DispatchResult> {
    const { result, applied } = await this.withProviderAnswers((provider) =>
      this.untilClaimed(async (manager) => {
        const claim = await claimEvent(manager, received, this.providerIds(received));
        if (claim.kind === 'duplicate') {
          const reason = `already received (${claim.status})`;
          return { result: { id: received.id, status: 'duplicate' as const, reason }, applied: [] };
        }
        const event = claim.kind === 'retry' ? parseEvent(claim.storedPayload) : received;
        if (claim.kind === 'retry') await lockProviderIds(manager, this.providerIds(event));
        const applied: Applied[] = [];
        const context = { manager, provider, applied, seen: new Set<string>() };
        await this.apply(context, event, claim.kind === 'new' ? { payload, source, waiting: claim.waiting } : undefined);
        // In this transaction: a license change is notified exactly when it is committed (spec §10). Only a
        // subscription change can move a license (invoices and customer deletions do not).
        const organisations = new Set(applied.filter((a) => a.outcome.subscriptionApplied).map((a) => a.outcome.organisationId));
        for (const organisationId of organisations) {
          if (organisationId) await this.licenseChanges.licenseMayHaveChanged(manager, organisationId);
        }
        // A subscription change whose answer never came is known once an event shows what it made (spec §11.4).
        const changed = new Set(applied.filter((a) => a.outcome.status === 'processed').map((a) => a.outcome.organisationId));
        for (const organisationId of changed) {
          if (organisationId) await this.changeOutcomes.settleFromEvents(manager, organisationId);
        }
        const { outcome } = applied[0];
        const result = { id: event.id, status: outcome.status, reason: outcome.reason ?? null };
        // An operator's replay is audited in its transaction; a duplicate (already processed) changed nothing.
        if (by) await this.audit.record(manager, by, { action: 'event.replayed', organisationId: outcome.organisationId ?? null, after: result });
        return { result, applied };
      }),
    );
    if (!applied.length) this.record(received, result.status, result.reason);
    for (const { event: e, outcome } of applied) this.record(e, outcome.status, outcome.reason ?? null);
    return result;
  }

  /**
   * Runs `work` (one delivery's transaction) with the provider's answers it asked for. A handler that
   * needs one throws `ProviderAnswerNeeded`, which rolls its transaction back; the provider is asked here,
   * with no transaction open (a provider that hangs holds no database connection), and the delivery runs
   * again with the answer. Each subscription is asked once per delivery, so this ends.
   */
  private async withProviderAnswers<T>(work: (provider: ProviderAnswers) => Promise<T>): Promise<T> {
    const answers = new Map<string, ProviderAnswer>();
    const provider: ProviderAnswers = {
      subscription: (id) => {
        const answer = answers.get(id);
        if (!answer) throw new ProviderAnswerNeeded(id);
        return answer;
      },
    };
    for (;;) {
      try {
        return await work(provider);
      } catch (err) {
        if (!(err instanceof ProviderAnswerNeeded) || answers.has(err.subscriptionId)) throw err;
        answers.set(err.subscriptionId, await this.askProvider(err.subscriptionId));
      }
    }
  }

  private async askProvider(subscriptionId: string): Promise<ProviderAnswer> {
    try {
      const answer = await this.provider.retrieveSubscription(subscriptionId);
      const parsed = subscriptionSchema.safeParse(answer);
      if (!parsed.success) return { error: `the provider's subscription ${subscriptionId} does not fit: ${wrongTypes(subscriptionSchema, answer)}` };
      return { subscription: parsed.data };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.logger.warn({ msg: 'the provider could not say what its subscription is now', subscriptionId, err: message });
      return { error: `the provider could not say what subscription ${subscriptionId} is now (${message.slice(0, 200)})` };
    }
  }

  /**
   * One delivery's transaction. A delivery of a new event id that a concurrent delivery of the same id
   * stored first (`ClaimLost`) is rolled back, effects included, and run again: the claim then finds the
   * row. Rare (a provider retry racing the first delivery, a reconciliation racing a webhook), and bounded:
   * the row it lost to is committed, so the next run sees it.
   */
  private async untilClaimed<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    for (let run = 1; ; run++) {
      try {
        return await transaction(this.db, work);
      } catch (err) {
        if (!(err instanceof ClaimLost) || run >= 3) throw err;
      }
    }
  }

  /** `events:replay`: the stored (verified on receipt) payload through the same path as a redelivery. */
  async replay(id: string, by: AuditActor): Promise<DispatchResult> {
    const payload = await storedPayload(this.db.manager, id);
    if (!payload) throw new AppException('event_not_found', `No webhook event with id ${id}.`);
    return this.dispatch(parseEvent(payload), payload, 'replay', by);
  }

  /** The ids an event's handler locks: none for an event with no handler or whose fields have other types than the provider's. */
  private providerIds(event: ProviderEvent): (string | undefined)[] {
    const typed = this.typed(event);
    return 'handler' in typed ? typed.handler.providerIds(typed.event) : [];
  }

  /** The event's handler and the event as its schema reads it; else why it has none. */
  private typed(event: ProviderEvent): { handler: EventHandler; event: ProviderEvent } | { outcome: HandlerOutcome } {
    const handler = this.handlers.get(event.type);
    if (!handler) return { outcome: { status: 'ignored', reason: `event type ${event.type} is not handled` } };
    const object = handler.schema.safeParse(event.data.object);
    if (!object.success) return { outcome: failed('invalid_event', wrongTypes(handler.schema, event.data.object)!) };
    return { handler, event: { ...event, data: { ...event.data, object: object.data as ProviderEvent['data']['object'] } } };
  }

  /**
   * What the event does, or why it does nothing. Events dated in the future would freeze their
   * subscription; fields of another type than the provider's would be read as absent.
   */
  private async handle(manager: EntityManager, event: ProviderEvent, provider: ProviderAnswers): Promise<HandlerOutcome> {
    const typed = this.typed(event);
    if ('outcome' in typed) return typed.outcome;
    return this.createdProblem(event) ?? typed.handler.handle(manager, typed.event, provider);
  }

  private createdProblem(event: ProviderEvent): HandlerOutcome | undefined {
    if (event.created < 0) return failed('invalid_event', 'the event has no valid created');
    if (event.created > Math.floor(Date.now() / 1000) + this.config.webhookToleranceS) {
      return failed('created_in_future', `created ${event.created} lies in the future`);
    }
    return undefined;
  }

  /**
   * Applies one event and records its outcome; `received`: the event is new to the ledger, whose row is
   * written here, as received. Then the unmatched events its links made matchable, oldest first.
   */
  private async apply(
    context: { manager: EntityManager; provider: ProviderAnswers; applied: Applied[]; seen: Set<string> },
    event: ProviderEvent,
    received?: { payload: string; source: EventSource; waiting: boolean },
  ): Promise<void> {
    const { manager, applied, seen } = context;
    seen.add(event.id);
    const outcome = await this.handle(manager, event, context.provider);
    if (received) await recordEvent(manager, event, received.payload, received.source, outcome);
    else await finishEvent(manager, event.id, outcome);
    applied.push({ event, outcome });
    // A new event's claim read whether any wait (under its locks, none can be added meanwhile).
    if (!outcome.linked || received?.waiting === false) return;
    const pending = await unmatchedEvents(manager, outcome.linked.customerId, outcome.linked.subscriptionId);
    for (const next of pending) {
      if (seen.has(next.id)) continue;
      // The claim locked the delivered event's ids; a pending event's are locked here, before its look-ups.
      await lockProviderIds(manager, this.providerIds(next));
      await this.apply(context, next);
    }
  }

  private record(event: ProviderEvent, outcome: string, reason: string | null) {
    webhookEvents.inc({ type: event.type, outcome });
    // Ids, type and outcome only: never the payload or the signature. A failed event of ours needs a person.
    const line = { msg: 'webhook event', event_id: event.id, type: event.type, outcome, reason };
    if (outcome === 'failed') this.logger.error({ ...line, msg: 'webhook event failed; events:replay it once the cause is fixed' });
    else this.logger.log(line);
  }
}
