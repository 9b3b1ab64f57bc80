import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EVENT_RANK, EVENT_TYPES, idOf } from '../provider/provider-event';
import { subscriptionFacts } from '../billing/provider-subscription-facts';
import { ApplyResult, KnownSubscription, ProviderSubscriptions, SubscriptionChange } from '../billing/provider-subscriptions.service';
import { AppConfig } from '../config/app-config';
import { NotificationsService } from '../notifications/notifications.service';
import { lockProviderIds } from './event-ledger';
import { resolveTier } from './tier-resolution';

/** The one reading of a provider subscription object (an event's, a fetched one, a change's answer) as a change. */
export function subscriptionChange(
  config: Pick<AppConfig, 'tiers' | 'providerPrices'>,
  sub: Record<string, any>,
  kind: SubscriptionChange['kind'],
  created: number,
  rank: number,
): SubscriptionChange {
  const tier = resolveTier(sub, config);
  return { kind, created, rank, ...('tier' in tier ? { tier: tier.tier, tierSource: tier.source } : {}), ...subscriptionFacts(sub) };
}

/**
 * What the provider says a subscription is now, applied as that subscription's newest state: spec §6's tie
 * rule (two `.updated` of one second: the fetched subscription settles it) and the provider's answer to a
 * change made here (spec §11.4). One implementation for both, so an answer and a fetch are applied alike.
 */
@Injectable()
export class CurrentSubscriptions {
  constructor(
    private readonly config: AppConfig,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly notifications: NotificationsService,
  ) {}

  /**
   * Applies `sub` as of `asOf` (Unix seconds), past the event order (an `.updated` of that second): events of
   * it created before `asOf` are stale afterwards, one of the same second is a tie settled by asking the
   * provider again. The caller holds the subscription's lock.
   */
  applyNow(
    manager: EntityManager,
    target: { id: string; organisationId: string; customerId: string | undefined },
    known: KnownSubscription | undefined,
    sub: Record<string, any>,
    asOf: number,
  ): Promise<ApplyResult> {
    const updated = EVENT_TYPES.subscriptionUpdated;
    return this.subscriptions.apply(manager, target, known, subscriptionChange(this.config, sub, 'updated', asOf, EVENT_RANK[updated]), true);
  }

  /** Takes the locks webhook events of these customer and subscription ids take (in the caller's transaction). */
  lock(manager: EntityManager, providerIds: (string | undefined)[]): Promise<void> {
    return lockProviderIds(manager, providerIds);
  }

  /**
   * The provider's answer to a change of one of the organisation's subscriptions, applied in the caller's
   * transaction under the lock its webhook events take (so they wait, and then find it applied), with the
   * license notification the change causes, if any.
   */
  async applyAnswer(manager: EntityManager, organisationId: string, sub: Record<string, any>, asOf: number): Promise<void> {
    const id = idOf(sub.id)!;
    const customerId = idOf(sub.customer);
    await lockProviderIds(manager, [customerId, id]);
    const known = await this.subscriptions.find(manager, id);
    await this.applyNow(manager, { id, organisationId, customerId }, known, sub, asOf);
    await this.notifications.licenseMayHaveChanged(manager, organisationId);
  }
}
