import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { NotificationsService } from '../notifications/notifications.service';
import { EVENT_TYPES, idOf, ProviderEvent, secondsOf } from '../provider/provider-event';
import { SubscriptionObject, subscriptionSchema } from '../provider/provider-objects';
import { EVENT_RANK } from '../subscriptions/event-order';
import { SubscriptionEvent, SubscriptionsService } from '../subscriptions/subscriptions.service';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, ProviderAnswers, reasons } from './event-handler';
import { OrganisationLinks } from './organisation-links';

type Event = ProviderEvent<SubscriptionObject>;

const providerIds = (event: Event) => [idOf(event.data.object.customer), idOf(event.data.object.id)];

/**
 * The three subscription events share one flow: read the subscription (its tier, once) and find its
 * organisation; an event with neither is another product's (ignored), one with a tier but no organisation yet
 * waits (unmatched); tie the customer to the organisation; have SubscriptionsService apply it in that
 * subscription's event order. The license follows the organisation's subscriptions (licensing).
 */
@Injectable()
abstract class SubscriptionHandler implements EventHandler<typeof subscriptionSchema> {
  protected abstract readonly kind: SubscriptionEvent['kind'];
  readonly schema = subscriptionSchema;

  constructor(
    private readonly links: OrganisationLinks,
    private readonly subscriptions: SubscriptionsService,
  ) {}

  providerIds = providerIds;

  async handle(manager: EntityManager, event: Event, provider: ProviderAnswers): Promise<HandlerOutcome> {
    const sub = event.data.object;
    const [customerId, subscriptionId] = providerIds(event);
    const ids = { subscriptionId, customerId };
    if (!subscriptionId) return failed('invalid_event', 'the subscription has no id', ids);
    const reading = this.subscriptions.read(sub);
    const known = await this.subscriptions.find(manager, subscriptionId);
    const match = await this.links.resolve(manager, [sub.metadata?.organisation_id], customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId) {
      if ('error' in reading.tier) {
        return { ...ids, status: 'ignored', reason: 'not a subscription of this service: no organisation and no tier of ours' };
      }
      return { ...ids, status: 'unmatched', reason: match.note ?? 'no organisation is linked to this customer or subscription yet' };
    }
    if ('error' in reading.tier && this.kind !== 'deleted') return failed('tier_unresolvable', reading.tier.error, { ...ids, organisationId });

    const target = { id: subscriptionId, organisationId, customerId };
    const position = { created: event.created, rank: EVENT_RANK[event.type] };
    let result = await this.subscriptions.apply(manager, target, known, { kind: this.kind, position, reading });
    if (result.outcome === 'tie') {
      // Two `.updated` of the same second: the provider's advice is to ask it what is current. Asked
      // outside this transaction (see ProviderAnswers); an answer it could not give fails the event,
      // replayable, rather than failing the delivery.
      const answer = provider.subscription(subscriptionId);
      if ('error' in answer) return failed('provider_unavailable', answer.error, { ...ids, organisationId });
      result = await this.subscriptions.applyCurrent(manager, target, known, answer.subscription, event.created);
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
}

/**
 * customer.subscription.trial_will_end (three days before a trial ends): a `trial.ending` notification
 * (spec §11.5) to the organisation of a subscription this service knows, not deleted. It changes no
 * subscription and takes no part in the event order (its object is the subscription as it was; the
 * subscription events carry every change). A subscription not known yet waits (unmatched), like its events.
 */
@Injectable()
@HandlesEvent(EVENT_TYPES.subscriptionTrialWillEnd)
export class TrialWillEndHandler implements EventHandler<typeof subscriptionSchema> {
  readonly schema = subscriptionSchema;

  constructor(
    private readonly links: OrganisationLinks,
    private readonly subscriptions: SubscriptionsService,
    private readonly notifications: NotificationsService,
  ) {}

  providerIds = providerIds;

  async handle(manager: EntityManager, event: Event): Promise<HandlerOutcome> {
    const sub = event.data.object;
    const [customerId, subscriptionId] = providerIds(event);
    const ids = { subscriptionId, customerId };
    if (!subscriptionId) return failed('invalid_event', 'the subscription has no id', ids);
    const { tier } = this.subscriptions.read(sub);
    const known = await this.subscriptions.find(manager, subscriptionId);
    const match = await this.links.resolve(manager, [sub.metadata?.organisation_id], customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId && 'error' in tier) return { ...ids, status: 'ignored', reason: 'not a subscription of this service' };
    if (!organisationId || !known) return { ...ids, status: 'unmatched', reason: `subscription ${subscriptionId} is not known yet` };
    if (known.deleted) return { ...ids, organisationId, status: 'stale', reason: `subscription ${subscriptionId} was deleted` };
    const trialEnd = secondsOf(sub.trial_end);
    if (trialEnd === undefined) return failed('invalid_event', 'the subscription has no trial_end', { ...ids, organisationId });
    const tierName = 'tier' in tier ? tier.tier : known.tier;
    if (!tierName) return failed('tier_unresolvable', 'error' in tier ? tier.error : 'no tier', { ...ids, organisationId });
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
