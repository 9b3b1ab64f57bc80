import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EVENT_RANK, EVENT_TYPES, idOf, ProviderEvent, secondsOf } from '../provider/provider-event';
import { ProviderSubscriptions, SubscriptionChange } from '../billing/provider-subscriptions.service';
import { AppConfig } from '../config/app-config';
import { NotificationsService } from '../notifications/notifications.service';
import { CurrentSubscriptions, subscriptionChange } from './current-subscriptions';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, ProviderAnswers, reasons } from './event-handler';
import { subscriptionSchema } from './event-schemas';
import { OrganisationLinks } from './organisation-links';
import { resolveTier } from './tier-resolution';

/**
 * The three subscription events share one flow: resolve the tier and the organisation; an event with
 * neither is another product's (ignored), one with a tier but no organisation yet waits (unmatched); tie
 * the customer to the organisation; have billing apply the change to that subscription, in that
 * subscription's event order. The license follows the organisation's subscriptions (licensing).
 */
@Injectable()
abstract class SubscriptionHandler implements EventHandler {
  protected abstract readonly kind: SubscriptionChange['kind'];
  readonly schema = subscriptionSchema;

  constructor(
    private readonly config: AppConfig,
    private readonly links: OrganisationLinks,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly current: CurrentSubscriptions,
  ) {}

  providerIds(event: ProviderEvent): (string | undefined)[] {
    return [idOf(event.data.object.customer), idOf(event.data.object.id)];
  }

  async handle(manager: EntityManager, event: ProviderEvent, provider: ProviderAnswers): Promise<HandlerOutcome> {
    const sub = event.data.object;
    const subscriptionId = idOf(sub.id);
    const customerId = idOf(sub.customer);
    const ids = { subscriptionId, customerId };
    if (!subscriptionId) return failed('invalid_event', 'the subscription has no id', ids);
    const tier = resolveTier(sub, this.config);
    const known = await this.subscriptions.find(manager, subscriptionId);
    const match = await this.links.resolve(manager, [sub.metadata?.organisation_id], customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId) {
      if ('error' in tier) {
        return { ...ids, status: 'ignored', reason: 'not a subscription of this service: no organisation and no tier of ours' };
      }
      return { ...ids, status: 'unmatched', reason: match.note ?? 'no organisation is linked to this customer or subscription yet' };
    }
    if ('error' in tier && this.kind !== 'deleted') return failed('tier_unresolvable', tier.error, { ...ids, organisationId });

    const target = { id: subscriptionId, organisationId, customerId };
    let result = await this.subscriptions.apply(manager, target, known, this.change(event, sub));
    if (result.outcome === 'tie') {
      // Two `.updated` of the same second: the provider's advice is to ask it what is current. Asked
      // outside this transaction (see ProviderAnswers); an answer it could not give fails the event,
      // replayable, rather than failing the delivery.
      const answer = provider.subscription(subscriptionId);
      if ('error' in answer) return failed('provider_unavailable', answer.error, { ...ids, organisationId });
      result = await this.current.applyNow(manager, target, known, answer.subscription, event.created);
    }
    const linkNote = await this.links.linkCustomer(manager, organisationId, customerId);
    return {
      ...ids,
      organisationId,
      status: result.outcome === 'applied' ? 'processed' : 'stale',
      subscriptionApplied: result.outcome === 'applied',
      reason: reasons(match.note, linkNote, result.outcome === 'stale' ? result.reason : undefined),
      linked: ids,
    };
  }

  private change(event: ProviderEvent, sub: Record<string, any>): SubscriptionChange {
    return subscriptionChange(this.config, sub, this.kind, event.created, EVENT_RANK[event.type]);
  }
}

/**
 * customer.subscription.trial_will_end (three days before a trial ends): a `trial.ending` notification
 * (spec §11.5) to the organisation of a subscription this service knows, not deleted. It changes no
 * subscription and takes no part in the event order (its object is the subscription as it was; the
 * subscription events carry every change). A subscription not known yet waits (unmatched), like its events.
 */
@Injectable()
@HandlesEvent(EVENT_TYPES.subscriptionTrialWillEnd)
export class TrialWillEndHandler implements EventHandler {
  readonly schema = subscriptionSchema;

  constructor(
    private readonly config: AppConfig,
    private readonly links: OrganisationLinks,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly notifications: NotificationsService,
  ) {}

  providerIds(event: ProviderEvent): (string | undefined)[] {
    return [idOf(event.data.object.customer), idOf(event.data.object.id)];
  }

  async handle(manager: EntityManager, event: ProviderEvent): Promise<HandlerOutcome> {
    const sub = event.data.object;
    const ids = { subscriptionId: idOf(sub.id), customerId: idOf(sub.customer) };
    if (!ids.subscriptionId) return failed('invalid_event', 'the subscription has no id', ids);
    const tier = resolveTier(sub, this.config);
    const known = await this.subscriptions.find(manager, ids.subscriptionId);
    const match = await this.links.resolve(manager, [sub.metadata?.organisation_id], ids.customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId && 'error' in tier) return { ...ids, status: 'ignored', reason: 'not a subscription of this service' };
    if (!organisationId || !known) return { ...ids, status: 'unmatched', reason: `subscription ${ids.subscriptionId} is not known yet` };
    if (known.deleted) return { ...ids, organisationId, status: 'stale', reason: `subscription ${ids.subscriptionId} was deleted` };
    const trialEnd = secondsOf(sub.trial_end);
    if (trialEnd === undefined) return failed('invalid_event', 'the subscription has no trial_end', { ...ids, organisationId });
    const tierName = 'tier' in tier ? tier.tier : known.tier;
    if (!tierName) return failed('tier_unresolvable', (tier as { error: string }).error, { ...ids, organisationId });
    const hasPaymentMethod = idOf(sub.default_payment_method) !== undefined;
    await this.notifications.trialEnding(manager, organisationId, { tier: tierName, trialEnd, hasPaymentMethod });
    return { ...ids, organisationId, status: 'processed', reason: match.note };
  }
}

@Injectable()
@HandlesEvent(EVENT_TYPES.subscriptionCreated)
export class SubscriptionCreatedHandler extends SubscriptionHandler {
  protected readonly kind = 'created';
}

@Injectable()
@HandlesEvent(EVENT_TYPES.subscriptionUpdated)
export class SubscriptionUpdatedHandler extends SubscriptionHandler {
  protected readonly kind = 'updated';
}

@Injectable()
@HandlesEvent(EVENT_TYPES.subscriptionDeleted)
export class SubscriptionDeletedHandler extends SubscriptionHandler {
  protected readonly kind = 'deleted';
}
