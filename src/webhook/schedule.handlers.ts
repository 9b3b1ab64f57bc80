import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EVENT_TYPES, idOf, ProviderEvent } from '../provider/provider-event';
import { ScheduleObject, scheduleSchema } from '../provider/provider-objects';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { EventHandler, failed, HandlerOutcome, HandlesEvent } from './event-handler';
import { OrganisationLinks } from './organisation-links';

/**
 * `subscription_schedule.*` events (spec §11.5): a schedule holds a subscription's pending change (a
 * downgrade at the period's end, 11.4). `.updated` keeps the change its next phase makes; `.released`,
 * `.canceled` and `.completed` end it (the order: src/subscriptions/event-order.ts). Applied to a subscription this service knows, in the order of
 * schedule events among themselves; a schedule of a subscription not known yet waits (unmatched) when its
 * customer belongs to an organisation, and is another product's (ignored) otherwise. The license does not
 * change: a pending change is only shown until the provider makes it, with its own subscription event.
 */
@Injectable()
abstract class ScheduleHandler implements EventHandler<typeof scheduleSchema> {
  readonly schema = scheduleSchema;

  constructor(
    private readonly links: OrganisationLinks,
    private readonly subscriptions: SubscriptionsService,
  ) {}

  // A released schedule names its former subscription as `released_subscription`.
  providerIds(event: ProviderEvent<ScheduleObject>): (string | undefined)[] {
    const schedule = event.data.object;
    return [idOf(schedule.customer), idOf(schedule.subscription) ?? idOf(schedule.released_subscription)];
  }

  async handle(manager: EntityManager, event: ProviderEvent<ScheduleObject>): Promise<HandlerOutcome> {
    const schedule = event.data.object;
    const [customerId, subscriptionId] = this.providerIds(event);
    const ids = { subscriptionId, customerId };
    if (!idOf(schedule.id)) return failed('invalid_event', 'the schedule has no id', ids);
    if (!subscriptionId) return { ...ids, status: 'ignored', reason: 'the schedule has no subscription (not started)' };
    const known = await this.subscriptions.find(manager, subscriptionId);
    const match = await this.links.resolve(manager, [schedule.metadata?.organisation_id], customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId) return { ...ids, status: 'ignored', reason: 'not a schedule of this service: no organisation' };
    if (!known) return { ...ids, status: 'unmatched', reason: `subscription ${subscriptionId} is not known yet` };

    if (known.deleted) return { ...ids, organisationId, status: 'stale', reason: `subscription ${subscriptionId} was deleted` };
    const applied = await this.subscriptions.applyScheduleEvent(manager, subscriptionId, known, schedule, event.type, event.created);
    return {
      ...ids,
      organisationId,
      status: applied ? 'processed' : 'stale',
      reason: applied ? match.note : 'older than the last schedule event applied to this subscription',
    };
  }
}

@Injectable()
@HandlesEvent(EVENT_TYPES.scheduleUpdated)
export class ScheduleUpdatedHandler extends ScheduleHandler {}

@Injectable()
@HandlesEvent(EVENT_TYPES.scheduleReleased)
export class ScheduleReleasedHandler extends ScheduleHandler {}

@Injectable()
@HandlesEvent(EVENT_TYPES.scheduleCanceled)
export class ScheduleCanceledHandler extends ScheduleHandler {}

@Injectable()
@HandlesEvent(EVENT_TYPES.scheduleCompleted)
export class ScheduleCompletedHandler extends ScheduleHandler {}
