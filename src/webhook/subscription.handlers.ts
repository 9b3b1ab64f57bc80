import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ProviderSubscriptions } from '../billing/provider-subscriptions.service';
import { EVENT_RANK, EVENT_TYPES, idOf, ProviderEvent, secondsOf } from '../billing/provider-event';
import { AppConfig } from '../config/app-config';
import { LicenseWriter, SubscriptionChange } from '../licensing/license-writer';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, reasons } from './event-handler';
import { OrganisationLinks } from './organisation-links';
import { resolveTier } from './tier-resolution';

/**
 * The three subscription events share one flow: resolve the tier (not for deletions), find the
 * organisation (else unmatched), link the subscription and customer to it, and have licensing apply the
 * change to the license, in order.
 */
@Injectable()
abstract class SubscriptionHandler implements EventHandler {
  protected abstract readonly kind: SubscriptionChange['kind'];

  constructor(
    private readonly config: AppConfig,
    private readonly links: OrganisationLinks,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly licenses: LicenseWriter,
  ) {}

  providerIds(event: ProviderEvent): (string | undefined)[] {
    return [idOf(event.data.object.customer), idOf(event.data.object.id)];
  }

  async handle(manager: EntityManager, event: ProviderEvent): Promise<HandlerOutcome> {
    const sub = event.data.object;
    const subscriptionId = idOf(sub.id);
    const customerId = idOf(sub.customer);
    const ids = { subscriptionId, customerId };
    if (!subscriptionId) return failed('invalid_event', 'the subscription has no id', ids);
    let tier: string | undefined;
    if (this.kind !== 'deleted') {
      const resolved = resolveTier(sub, this.config.tiers);
      if ('error' in resolved) return failed('tier_unresolvable', resolved.error, ids);
      tier = resolved.tier;
    }

    const match = await this.links.resolve(manager, [sub.metadata?.organisation_id], customerId, subscriptionId);
    const organisationId = match.organisationId;
    if (!organisationId) {
      return { ...ids, status: 'unmatched', reason: match.note ?? 'no organisation is linked to this customer or subscription yet' };
    }
    const linkNote = await this.links.link(manager, organisationId, match, subscriptionId, customerId);
    if (this.kind === 'deleted') await this.subscriptions.markDeleted(manager, subscriptionId, event.created);
    const result = await this.licenses.applySubscriptionChange(manager, organisationId, {
      kind: this.kind,
      created: event.created,
      rank: EVENT_RANK[event.type],
      subscriptionId,
      subscriptionDeleted: match.subscription?.deleted ?? false,
      tier,
      status: typeof sub.status === 'string' ? sub.status : null,
      ...currentPeriod(sub),
    });
    return {
      ...ids,
      organisationId,
      status: result.applied ? 'processed' : 'stale',
      reason: reasons(match.note, linkNote, result.applied ? undefined : result.reason),
      linked: ids,
    };
  }
}

/** Today the period lives on the subscription items; older API versions put it on the subscription. */
function currentPeriod(sub: Record<string, any>): { periodStart: number | null; periodEnd: number | null } {
  const item = Array.isArray(sub.items?.data) ? sub.items.data[0] : undefined;
  return {
    periodStart: secondsOf(item?.current_period_start) ?? secondsOf(sub.current_period_start) ?? null,
    periodEnd: secondsOf(item?.current_period_end) ?? secondsOf(sub.current_period_end) ?? null,
  };
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
