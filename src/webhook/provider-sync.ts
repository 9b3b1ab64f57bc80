import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PaymentProvider, PaymentProviderError, PROVIDER_PAGE_SIZE } from '../provider/payment-provider.port';
import { idOf } from '../provider/provider-event';
import { StoredSubscription, SubscriptionsService } from '../subscriptions/subscriptions.service';
import { RequestPace, withRequestPace } from '../provider/request-pace';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { providerSyncChanges } from '../common/metrics';
import { EventDispatcher } from './event-dispatcher';
import { parseEvent } from './event-parsing';
import { ProviderSyncRunsRepository } from './provider-sync-runs.repository';
import { SyncSpillRepository } from './sync-spill.repository';
import { knownEventIds } from './webhook-ledger.repository';

export interface SyncSummary {
  events_seen: number;
  events_applied: number;
  subscriptions_checked: number;
  subscriptions_corrected: number;
}

/** The provider keeps 30 days of events. */
export const EVENT_RETENTION_DAYS = 30;

/**
 * Reconciliation with the provider (spec §9), for what webhooks missed: an outage longer than the
 * provider's retries, an endpoint it disabled, a secret rotated wrongly, a bug fixed since. It costs pages,
 * not subscriptions, and holds one page in memory, never the account:
 *  1. Every page of the provider's events of the handled types (newest first) goes to the spill table, less
 *     the ids the ledger has; then the spill is applied oldest first, a page at a time, through the same
 *     dispatcher as a webhook (ledger source `sync`), whose claim makes a webhook of the same event at the
 *     same moment one effect.
 *  2. Every page of the provider's subscriptions (all statuses, each with its schedule expanded: no request
 *     of its own) is compared with the stored ones of its page; those that drifted (tier, status, period,
 *     seats, interval, cancel_at_period_end, trial_end; schedule and pending change) are corrected. A stored
 *     one the list did not show is fetched alone (with its schedule, when it names one).
 * Every provider request of the run, however deep, keeps to PROVIDER_SYNC_MAX_RPS (RequestPace). Running
 * it again changes nothing. What cannot be applied (a 404, no tier of ours, a conflict) is logged and left;
 * a provider that cannot be reached (after the SDK's retries) stops the run with what was applied kept, and
 * the next run, walking the lists again, does the rest.
 */
@Injectable()
export class ProviderSync {
  private readonly logger = new Logger('ProviderSync');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly dispatcher: EventDispatcher,
    private readonly provider: PaymentProvider,
    private readonly subscriptions: SubscriptionsService,
    private readonly config: AppConfig,
    private readonly spill: SyncSpillRepository,
    private readonly runs: ProviderSyncRunsRepository,
  ) {}

  /**
   * One run, recorded with its outcome in provider_sync_runs: `trigger` is who started it (`schedule`,
   * `cli:<os user>`, `operator:<email>`).
   */
  async run(sinceDays = EVENT_RETENTION_DAYS, trigger = 'schedule'): Promise<SyncSummary> {
    const recorded = await this.runs.start(trigger);
    const runId = await this.spill.begin();
    try {
      const summary = await withRequestPace(new RequestPace(this.config.providerSyncMaxRps), async () => {
        const events = await this.pullEvents(runId, Math.floor(Date.now() / 1000) - sinceDays * 86_400);
        const subscriptions = await this.checkSubscriptions(runId);
        return { events_seen: events.seen, events_applied: events.applied, ...subscriptions };
      });
      await this.runs.finish(recorded, { summary: { ...summary } });
      return summary;
    } catch (err) {
      await this.runs.finish(recorded, { error: err instanceof Error ? err.message : String(err) }).catch(() => undefined);
      throw err;
    } finally {
      // A run that cannot clean up (the database is gone) leaves its rows to the next run's begin().
      await this.spill.end(runId).catch((err: Error) => this.logger.warn({ msg: 'provider sync: spill not cleared', error: err.message }));
    }
  }

  /** Walks every page of the provider's events into the spill, then applies them oldest first. */
  private async pullEvents(runId: string, createdGte: number): Promise<{ seen: number; applied: number }> {
    const types = this.dispatcher.handledTypes();
    let seen = 0;
    for (let startingAfter: string | undefined, more = true; more; ) {
      const page = await this.provider.listEvents({ types, createdGte, startingAfter });
      const known = await knownEventIds(this.db.manager, page.data.map((e) => e.id));
      await this.spill.keepEvents(runId, page.data, -seen, (e) => !known.has(e.id));
      seen += page.data.length;
      startingAfter = page.data.at(-1)?.id;
      more = page.hasMore && startingAfter !== undefined;
    }
    let applied = 0;
    for (let batch = await this.spill.nextEvents(runId, undefined, PROVIDER_PAGE_SIZE); batch.length; ) {
      for (const { payload } of batch) if (await this.applyEvent(payload)) applied++;
      batch = await this.spill.nextEvents(runId, batch.at(-1), PROVIDER_PAGE_SIZE);
    }
    providerSyncChanges.inc({ kind: 'event_applied' }, applied);
    return { seen, applied };
  }

  /** One event through the webhook's dispatcher; true unless the ledger had it meanwhile. */
  private async applyEvent(payload: string): Promise<boolean> {
    try {
      return (await this.dispatcher.dispatch(parseEvent(payload), payload, 'sync')).status !== 'duplicate';
    } catch (err) {
      if (!cannotBeApplied(err)) throw err;
      const eventId = /"id":"([^"]*)"/.exec(payload)?.[1];
      this.logger.warn({ msg: 'a provider event could not be applied; left as it is', eventId, error: (err as Error).message });
      return false;
    }
  }

  /** Compares every page of the provider's subscriptions with the stored ones, then fetches the unseen alone. */
  private async checkSubscriptions(runId: string): Promise<Pick<SyncSummary, 'subscriptions_checked' | 'subscriptions_corrected'>> {
    let checked = 0;
    let corrected = 0;
    const check = async (stored: StoredSubscription, current: Record<string, any> | undefined) => {
      checked++;
      if (current && (await this.correct(stored, current))) corrected++;
    };
    for (let startingAfter: string | undefined, more = true; more; ) {
      const page = await this.provider.listSubscriptions({ startingAfter });
      const ids = page.data.map((s) => String(s.id));
      await this.spill.seeSubscriptions(runId, ids);
      const stored = await this.subscriptions.findNotDeleted(this.db.manager, ids);
      for (const current of page.data) {
        const mine = stored.get(current.id);
        if (mine) await check(mine, current);
      }
      startingAfter = ids.at(-1);
      more = page.hasMore && startingAfter !== undefined;
    }
    for (let batch = await this.subscriptions.listNotDeleted(this.db.manager, undefined, PROVIDER_PAGE_SIZE); batch.length; ) {
      const unseen = await this.spill.unseenSubscriptions(runId, batch.map((s) => s.id));
      for (const stored of batch.filter((s) => unseen.has(s.id))) await check(stored, await this.fetchAlone(stored.id));
      batch = await this.subscriptions.listNotDeleted(this.db.manager, batch.at(-1)!.id, PROVIDER_PAGE_SIZE);
    }
    providerSyncChanges.inc({ kind: 'subscription_corrected' }, corrected);
    return { subscriptions_checked: checked, subscriptions_corrected: corrected };
  }

  /**
   * A stored subscription the provider's list did not show, with its schedule as the list expands it (fetched
   * too when it names one); undefined (logged) when the provider does not know it. A schedule the provider does
   * not know leaves the subscription's schedule uncompared.
   */
  private async fetchAlone(subscriptionId: string): Promise<Record<string, any> | undefined> {
    let subscription: Record<string, any>;
    try {
      subscription = await this.provider.retrieveSubscription(subscriptionId);
    } catch (err) {
      if (!cannotBeApplied(err)) throw err;
      this.logger.warn({ msg: 'the provider does not know this subscription; left as it is', subscriptionId });
      return undefined;
    }
    const scheduleId = typeof subscription.schedule === 'string' ? idOf(subscription.schedule) : undefined;
    if (!scheduleId) return subscription;
    try {
      return { ...subscription, schedule: await this.provider.retrieveSchedule(scheduleId) };
    } catch (err) {
      if (!cannotBeApplied(err)) throw err;
      this.logger.warn({ msg: "the provider does not know this subscription's schedule; its pending change is left as it is", subscriptionId, scheduleId });
      const { schedule: _, ...withoutSchedule } = subscription;
      return withoutSchedule;
    }
  }

  /** Corrects a stored subscription where it drifted from the provider's (`current`); true when it did. */
  private async correct(stored: StoredSubscription, current: Record<string, any>): Promise<boolean> {
    const result = await this.subscriptions.reconcile(stored, current);
    if ('skipped' in result) {
      this.logger.warn({ msg: "the provider's subscription has no tier of ours; left as it is", subscriptionId: stored.id, reason: result.skipped });
      return false;
    }
    if ('unchanged' in result) return false;
    const { state, schedule } = result.corrected;
    this.logger.warn({ msg: 'subscription corrected to what the provider says', subscriptionId: stored.id, organisationId: stored.organisationId, ...state, ...(schedule && { schedule }) });
    return true;
  }
}

/**
 * The provider does not know it or refuses it, or the event is not one: one object's problem, not the run's.
 * A provider that is down or out of budget (`unavailable`, `rate_limited`) is the run's.
 */
function cannotBeApplied(err: unknown): boolean {
  return (err instanceof PaymentProviderError && (err.kind === 'not_found' || err.kind === 'rejected')) || err instanceof AppException;
}
