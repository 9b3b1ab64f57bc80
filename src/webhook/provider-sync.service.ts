import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PaymentProvider, PaymentProviderError } from '../billing/payment-provider.port';
import { EVENT_RANK, secondsOf } from '../billing/provider-event';
import { ProviderSubscriptions } from '../billing/provider-subscriptions.service';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { NotificationsService } from '../notifications/notifications.service';
import { providerSyncChanges } from '../ops/metrics';
import { EventDispatcher } from './event-dispatcher';
import { lockProviderIds } from './event-ledger';
import { knownEventIds } from './webhook-ledger.repository';
import { resolveTier } from './tier-resolution';

export interface SyncSummary {
  events_seen: number;
  events_applied: number;
  subscriptions_checked: number;
  subscriptions_corrected: number;
}

/** The provider keeps 30 days of events. */
export const EVENT_RETENTION_DAYS = 30;

/**
 * Reconciliation with the provider (SPEC 9), for what webhooks missed: an outage longer than the
 * provider's retries, an endpoint it disabled, a secret rotated wrongly, a bug fixed since.
 *  1. Every event of the handled types still kept by the provider that the ledger lacks goes through the
 *     same dispatcher as a webhook (ledger source `sync`), oldest first; the ledger's claim makes a webhook
 *     of the same event at the same moment one effect.
 *  2. Every subscription not deleted is fetched and corrected where it drifted (tier, status, period).
 * Running it again changes nothing. A subscription the provider does not know is logged and left; a
 * provider that cannot be reached (after the SDK's retries) stops the run with what was applied kept.
 */
@Injectable()
export class ProviderSync {
  private readonly logger = new Logger('ProviderSync');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly dispatcher: EventDispatcher,
    private readonly provider: PaymentProvider,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly config: AppConfig,
    private readonly notifications: NotificationsService,
  ) {}

  async run(sinceDays = EVENT_RETENTION_DAYS): Promise<SyncSummary> {
    const since = Math.floor(Date.now() / 1000) - sinceDays * 86_400;
    const events = await this.provider.listEvents(this.dispatcher.handledTypes(), since);
    events.sort((a, b) => a.created - b.created || (EVENT_RANK[a.type] ?? 9) - (EVENT_RANK[b.type] ?? 9));
    const known = await knownEventIds(this.db.manager, events.map((e) => e.id));
    let applied = 0;
    for (const event of events.filter((e) => !known.has(e.id))) {
      const result = await this.dispatcher.dispatch(event, JSON.stringify(event), 'sync');
      if (result.status !== 'duplicate') applied++;
    }
    providerSyncChanges.inc({ kind: 'event_applied' }, applied);

    const subscriptions = await this.subscriptions.listNotDeleted(this.db.manager);
    let corrected = 0;
    for (const subscription of subscriptions) {
      if (await this.correct(subscription)) corrected++;
    }
    providerSyncChanges.inc({ kind: 'subscription_corrected' }, corrected);
    return { events_seen: events.length, events_applied: applied, subscriptions_checked: subscriptions.length, subscriptions_corrected: corrected };
  }

  /** Fetches one subscription and corrects it where it drifted; true when it did. */
  private async correct(subscription: { id: string; organisationId: string; customerId: string | null }): Promise<boolean> {
    let current: Record<string, any>;
    try {
      current = await this.provider.retrieveSubscription(subscription.id);
    } catch (err) {
      if (!(err instanceof PaymentProviderError && err.kind === 'not_found')) throw err;
      this.logger.warn({ msg: 'the provider does not know this subscription; left as it is', subscriptionId: subscription.id });
      return false;
    }
    const tier = resolveTier(current, this.config);
    if ('error' in tier && current.status !== 'canceled') {
      this.logger.warn({ msg: 'the provider\'s subscription has no tier of ours; left as it is', subscriptionId: subscription.id, reason: tier.error });
      return false;
    }
    const item = Array.isArray(current.items?.data) ? current.items.data[0] : undefined;
    const now = {
      tier: 'tier' in tier ? tier.tier : undefined,
      status: typeof current.status === 'string' ? current.status : null,
      periodStart: secondsOf(item?.current_period_start) ?? secondsOf(current.current_period_start) ?? null,
      periodEnd: secondsOf(item?.current_period_end) ?? secondsOf(current.current_period_end) ?? null,
    };
    // Under the subscription's advisory lock, like its webhook events: a delivery of one cannot interleave.
    const change = await transaction(this.db, async (manager) => {
      await lockProviderIds(manager, [subscription.customerId ?? undefined, subscription.id]);
      const corrected = await this.subscriptions.correct(manager, subscription.id, now, Math.floor(Date.now() / 1000));
      // Notified like any change, in the transaction of the correction.
      if (corrected) await this.notifications.licenseMayHaveChanged(manager, subscription.organisationId);
      return corrected;
    });
    if (!change) return false;
    this.logger.warn({ msg: 'subscription corrected to what the provider says', subscriptionId: subscription.id, organisationId: subscription.organisationId, ...change });
    return true;
  }
}

