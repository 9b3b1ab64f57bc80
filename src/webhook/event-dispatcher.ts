import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ProviderEvent } from '../billing/provider-event';
import { AppException } from '../common/app-exception';
import { transaction } from '../database/transaction';
import { webhookEvents } from '../ops/metrics';
import { AppConfig } from '../config/app-config';
import { NotificationsService } from '../notifications/notifications.service';
import { EventHandler, failed, HandlerOutcome, HandlesEvent } from './event-handler';
import { claimEvent, ClaimLost, finishEvent, inOneStatement, recordEvent, storedPayload, unmatchedEvents } from './event-ledger';
import { lockProviderIds } from './organisation-links';
import { parseEvent } from './provider-event';
import { EventSource, LedgerStatus } from './webhook-event.entity';

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
 * Runs each event in one transaction. A new event in its handler's common case (an invoice or an update of
 * a stored subscription: `inOneStatement`) is one statement after its locks: apply it and write its ledger
 * row, commit. Any other goes the general way: lock the event's customer and subscription ids, read its
 * ledger row, pick the handler for its type (registered with @HandlesEvent), write the ledger row with the
 * outcome (once), and apply the unmatched events that this event's links made matchable. A redelivery of
 * an event that had no effect yet (unmatched, failed) applies the payload stored first, whatever body came
 * with it. Metrics and logs
 * are written only after the commit, so they never count what was not stored.
 */
@Injectable()
export class EventDispatcher implements OnModuleInit {
  private readonly logger = new Logger('Webhook');
  private readonly handlers = new Map<string, EventHandler>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly discovery: DiscoveryService,
    private readonly config: AppConfig,
    private readonly notifications: NotificationsService,
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
  async dispatch(received: ProviderEvent, payload: string, source: EventSource = 'webhook'): Promise<DispatchResult> {
    const atOnce = await this.inOneStatement(received, payload, source);
    if (atOnce) {
      this.record(received, atOnce.status, atOnce.reason);
      return { id: received.id, ...atOnce };
    }
    const { result, applied } = await this.untilClaimed(async (manager) => {
      const claim = await claimEvent(manager, received, this.providerIds(received));
      if (claim.kind === 'duplicate') {
        const reason = `already received (${claim.status})`;
        return { result: { id: received.id, status: 'duplicate' as const, reason }, applied: [] };
      }
      const event = claim.kind === 'retry' ? parseEvent(claim.storedPayload) : received;
      if (claim.kind === 'retry') await lockProviderIds(manager, this.providerIds(event));
      const applied: Applied[] = [];
      await this.apply(manager, event, applied, new Set(), claim.kind === 'new' ? { payload, source, waiting: claim.waiting } : undefined);
      // In this transaction: a license change is notified exactly when it is committed (SPEC 10). Only a
      // subscription change can move a license (invoices and customer deletions do not).
      const organisations = new Set(applied.filter((a) => a.outcome.subscriptionApplied).map((a) => a.outcome.organisationId));
      for (const organisationId of organisations) {
        if (organisationId) await this.notifications.licenseMayHaveChanged(manager, organisationId);
      }
      const { outcome } = applied[0];
      return { result: { id: event.id, status: outcome.status, reason: outcome.reason ?? null }, applied };
    });
    if (!applied.length) this.record(received, result.status, result.reason);
    for (const { event: e, outcome } of applied) this.record(e, outcome.status, outcome.reason ?? null);
    return result;
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

  /**
   * A new event's common case (its handler's `inOneStatement`): lock, then apply and write the ledger row
   * in one statement, commit. Undefined when it was not that case, and then nothing was written. Not taken when
   * the license may change and notifications are on: comparing the license needs `handle`'s transaction.
   */
  private async inOneStatement(event: ProviderEvent, payload: string, source: EventSource) {
    const handler = this.handlers.get(event.type);
    const effect = handler && !this.createdProblem(event) ? handler.inOneStatement?.(event) : undefined;
    if (!effect || (effect.changesLicense && this.notifications.enabled)) return undefined;
    try {
      return await transaction(this.db, (manager) => inOneStatement(manager, event, payload, source, handler!.providerIds(event), effect));
    } catch (err) {
      if (err instanceof ClaimLost) return undefined;
      throw err;
    }
  }

  /** `events:replay`: the stored (verified on receipt) payload through the same path as a redelivery. */
  async replay(id: string): Promise<DispatchResult> {
    const payload = await storedPayload(this.db.manager, id);
    if (!payload) throw new AppException('event_not_found', `No webhook event with id ${id}.`);
    return this.dispatch(parseEvent(payload), payload, 'replay');
  }

  private providerIds(event: ProviderEvent): (string | undefined)[] {
    return this.handlers.get(event.type)?.providerIds(event) ?? [];
  }

  /** What the event does, or why it does nothing. Events dated in the future would freeze their subscription. */
  private async handle(manager: EntityManager, event: ProviderEvent): Promise<HandlerOutcome> {
    const handler = this.handlers.get(event.type);
    if (!handler) return { status: 'ignored', reason: `event type ${event.type} is not handled` };
    return this.createdProblem(event) ?? handler.handle(manager, event);
  }

  private createdProblem(event: ProviderEvent): HandlerOutcome | undefined {
    if (event.created < 0) return failed('invalid_event', 'the event has no valid created');
    if (event.created > Math.floor(Date.now() / 1000) + this.config.webhookToleranceS) {
      return failed('created_in_future', `created ${event.created} lies in the future`);
    }
    return undefined;
  }

  /**
   * `received`: the event is new to the ledger, whose row is written here, with its outcome, as received.
   */
  private async apply(
    manager: EntityManager,
    event: ProviderEvent,
    applied: Applied[],
    seen: Set<string>,
    received?: { payload: string; source: EventSource; waiting: boolean },
  ): Promise<void> {
    seen.add(event.id);
    const outcome = await this.handle(manager, event);
    let waiting: boolean;
    if (received) {
      waiting = received.waiting && outcome.linked !== undefined;
      await recordEvent(manager, event, received.payload, received.source, outcome);
    } else {
      waiting = (await finishEvent(manager, event.id, outcome)).waiting;
    }
    applied.push({ event, outcome });
    if (!waiting || !outcome.linked) return;
    const pending = await unmatchedEvents(manager, outcome.linked.customerId, outcome.linked.subscriptionId);
    for (const next of pending) {
      if (seen.has(next.id)) continue;
      // The claim locked the delivered event's ids; a pending event's are locked here, before its look-ups.
      await lockProviderIds(manager, this.providerIds(next));
      await this.apply(manager, next, applied, seen);
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
