import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { EventHandler, failed, HandlerOutcome, reasons } from './event-handler';
import { applyToLicense, SubscriptionChange } from './license-writer';
import { linkSubscription, resolveOrganisation } from './organisation-links';
import { EVENT_RANK, idOf, ProviderEvent, secondsOf } from './provider-event';
import { resolveTier } from './tier-resolution';
import { Sql } from './transaction';

/**
 * The three subscription events share one flow: resolve the tier (not for deletions), find the
 * organisation (else unmatched), link the subscription and customer to it, apply to the license in order.
 */
@Injectable()
abstract class SubscriptionHandler extends EventHandler {
  protected abstract readonly kind: SubscriptionChange['kind'];

  constructor(private readonly config: AppConfig) {
    super();
  }

  providerIds(event: ProviderEvent): (string | undefined)[] {
    return [idOf(event.data.object.customer), idOf(event.data.object.id)];
  }

  async handle(sql: Sql, event: ProviderEvent): Promise<HandlerOutcome> {
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

    const match = await resolveOrganisation(sql, [sub.metadata?.organisation_id], customerId, subscriptionId);
    const organisationId = match.organisationId;
    if (!organisationId) {
      return { ...ids, status: 'unmatched', reason: match.note ?? 'no organisation is linked to this customer or subscription yet' };
    }
    const link = await linkSubscription(sql, organisationId, subscriptionId, customerId);
    const result = await applyToLicense(sql, organisationId, {
      kind: this.kind,
      created: event.created,
      rank: EVENT_RANK[event.type],
      subscriptionId,
      tier,
      status: typeof sub.status === 'string' ? sub.status : null,
      ...currentPeriod(sub),
    });
    return {
      ...ids,
      organisationId,
      status: result.applied ? 'processed' : 'stale',
      reason: reasons(match.note, link.note, result.applied ? undefined : result.reason),
      linked: link.waiting ? ids : undefined,
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
export class SubscriptionCreatedHandler extends SubscriptionHandler {
  readonly type = 'customer.subscription.created';
  protected readonly kind = 'created';
}

@Injectable()
export class SubscriptionUpdatedHandler extends SubscriptionHandler {
  readonly type = 'customer.subscription.updated';
  protected readonly kind = 'updated';
}

@Injectable()
export class SubscriptionDeletedHandler extends SubscriptionHandler {
  readonly type = 'customer.subscription.deleted';
  protected readonly kind = 'deleted';
}
