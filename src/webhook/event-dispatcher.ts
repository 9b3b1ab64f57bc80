import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { webhookEvents } from '../ops/metrics';
import { EventHandler, HandlerOutcome } from './event-handler';
import { claimEvent, finishEvent, storedPayload, unmatchedEvents } from './event-ledger';
import { InvoicePaidHandler } from './invoice-paid.handler';
import { lockProviderIds } from './organisation-links';
import { ProviderEvent } from './provider-event';
import { SubscriptionCreatedHandler, SubscriptionDeletedHandler, SubscriptionUpdatedHandler } from './subscription.handlers';
import { Sql, transaction } from './transaction';
import { LedgerStatus } from './webhook-event.entity';

export interface DispatchResult {
  id: string;
  status: LedgerStatus;
  reason: string | null;
  /** A 4xx to answer (the event was stored as failed). */
  rejection?: { code: string; message: string };
}

interface Applied {
  event: ProviderEvent;
  outcome: HandlerOutcome;
}

/**
 * Runs each event in one transaction: lock the event's customer and subscription ids and claim the
 * ledger row (one statement), pick the handler for its type, record the outcome, and apply the unmatched
 * events that this event's links made matchable. Metrics and logs are
 * written only after the commit, so they never count what was not stored.
 */
@Injectable()
export class EventDispatcher {
  private readonly logger = new Logger('Webhook');
  private readonly handlers: Map<string, EventHandler>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    created: SubscriptionCreatedHandler,
    updated: SubscriptionUpdatedHandler,
    deleted: SubscriptionDeletedHandler,
    invoicePaid: InvoicePaidHandler,
  ) {
    this.handlers = new Map([created, updated, deleted, invoicePaid].map((h) => [h.type, h]));
  }

  async dispatch(event: ProviderEvent): Promise<DispatchResult> {
    const { result, applied } = await transaction(this.db, async (sql) => {
      const claim = await claimEvent(sql, event, this.handlers.get(event.type)?.providerIds(event) ?? []);
      if (claim.kind === 'duplicate') {
        const reason = `already received (${claim.status})`;
        return { result: { id: event.id, status: 'duplicate' as const, reason }, applied: [] };
      }
      const applied: Applied[] = [];
      await this.apply(sql, event, applied, new Set());
      const { outcome } = applied[0];
      return {
        result: { id: event.id, status: outcome.status, reason: outcome.reason ?? null, rejection: outcome.rejection },
        applied,
      };
    });
    if (!applied.length) this.record(event, result.status, result.reason);
    for (const { event: e, outcome } of applied) this.record(e, outcome.status, outcome.reason ?? null);
    return result;
  }

  /** `events:replay`: the stored (verified on receipt) payload through the same path as a redelivery. */
  async replay(id: string): Promise<DispatchResult> {
    const payload = await transaction(this.db, (sql) => storedPayload(sql, id));
    if (!payload) throw new AppException(404, 'event_not_found', `No webhook event with id ${id}.`);
    return this.dispatch(payload);
  }

  private async apply(sql: Sql, event: ProviderEvent, applied: Applied[], seen: Set<string>): Promise<void> {
    seen.add(event.id);
    const handler = this.handlers.get(event.type);
    const outcome: HandlerOutcome = handler
      ? await handler.handle(sql, event)
      : { status: 'ignored', reason: `event type ${event.type} is not handled` };
    await finishEvent(sql, event.id, outcome);
    applied.push({ event, outcome });
    if (!outcome.linked) return;
    const pending = await unmatchedEvents(sql, outcome.linked.customerId, outcome.linked.subscriptionId);
    for (const next of pending) {
      if (seen.has(next.id)) continue;
      // The claim locked the delivered event's ids; a pending event's are locked here, before its look-ups.
      await lockProviderIds(sql, this.handlers.get(next.type)?.providerIds(next) ?? []);
      await this.apply(sql, next, applied, seen);
    }
  }

  private record(event: ProviderEvent, outcome: string, reason: string | null) {
    webhookEvents.inc({ type: event.type, outcome });
    // Ids, type and outcome only: never the payload or the signature.
    this.logger.log({ msg: 'webhook event', event_id: event.id, type: event.type, outcome, reason });
  }
}
