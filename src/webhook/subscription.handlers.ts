import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { PaymentProvider } from '../billing/payment-provider.port';
import { EVENT_RANK, EVENT_TYPES, idOf, ProviderEvent, secondsOf } from '../billing/provider-event';
import { ProviderSubscriptions, SubscriptionChange } from '../billing/provider-subscriptions.service';
import { subscriptionSql } from '../billing/subscription.sql';
import { AppConfig } from '../config/app-config';
import { namedParams } from '../database/prepared';
import { accessSql } from '../identity/access.sql';
import { UUID } from '../identity/identity.service';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, OneStatement, reasons } from './event-handler';
import { appliedMeanwhile, ClaimLost } from './event-ledger';
import { metadataOrganisation, OrganisationLinks } from './organisation-links';
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

  constructor(
    private readonly config: AppConfig,
    private readonly links: OrganisationLinks,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly provider: PaymentProvider,
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

    const linkNote = await this.links.linkCustomer(manager, organisationId, customerId);
    const target = { id: subscriptionId, organisationId, customerId };
    let result = await this.subscriptions.apply(manager, target, known, this.change(event, sub));
    if (result.outcome === 'tie') {
      // A tie with itself: another delivery of this very event applied it while this one waited for the
      // subscription's lock. This delivery is then rolled back and run again (finding the event stored),
      // without asking the provider.
      if (await appliedMeanwhile(manager, event.id)) throw new ClaimLost(event.id);
      // Two `.updated` of the same second: the provider's advice is to ask it what is current.
      const current = await this.provider.retrieveSubscription(subscriptionId);
      result = await this.subscriptions.apply(manager, target, known, this.change(event, current), true);
    }
    return {
      ...ids,
      organisationId,
      status: result.outcome === 'applied' ? 'processed' : 'stale',
      subscriptionApplied: result.outcome === 'applied',
      reason: reasons(match.note, linkNote, result.outcome === 'stale' ? result.reason : undefined),
      linked: ids,
    };
  }

  /**
   * The common case, what `handle` does when the subscription is stored and not deleted, metadata names its
   * organisation or none, its customer is that organisation's already, and the event comes after the last
   * one applied (no tie): apply the change.
   */
  inOneStatement(event: ProviderEvent): OneStatement | undefined {
    const sub = event.data.object;
    const subscriptionId = idOf(sub.id);
    const customerId = idOf(sub.customer);
    if (!subscriptionId) return undefined;
    if ('error' in resolveTier(sub, this.config) && this.kind !== 'deleted') return undefined;
    const given = metadataOrganisation([sub.metadata?.organisation_id]);
    if (given !== undefined && !UUID.test(given)) return undefined;
    const change = this.change(event, sub);
    return {
      ctes: SUBSCRIPTION_CTES,
      values: SUBSCRIPTION.values({
        ...change,
        tier: change.tier ?? null,
        deleted: change.kind === 'deleted',
        subscriptionId,
        customerId: customerId ?? null,
        given: given ?? null,
      }),
      changesLicense: true,
      subscriptionId,
      customerId,
    };
  }

  private change(event: ProviderEvent, sub: Record<string, any>): SubscriptionChange {
    const tier = resolveTier(sub, this.config);
    return {
      kind: this.kind,
      created: event.created,
      rank: EVENT_RANK[event.type],
      tier: 'tier' in tier ? tier.tier : undefined,
      status: typeof sub.status === 'string' ? sub.status.slice(0, 64) : null,
      ...currentPeriod(sub),
    };
  }
}

const SUBSCRIPTION = namedParams(
  'subscriptionId',
  'customerId',
  'given',
  'kind',
  'tier',
  'status',
  'periodStart',
  'periodEnd',
  'created',
  'rank',
  'deleted',
);
const P = SUBSCRIPTION.ref;
const SUBSCRIPTION_CTES = `
  applied AS (${subscriptionSql.applyInOrder(
    `${P.subscriptionId}::text`,
    `${P.kind}::text`,
    {
      tier: `${P.tier}::text`,
      status: `${P.status}::text`,
      periodStart: `${P.periodStart}::bigint`,
      periodEnd: `${P.periodEnd}::bigint`,
      created: `${P.created}::bigint`,
      rank: `${P.rank}::smallint`,
      deleted: `${P.deleted}::boolean`,
    },
    `EXISTS (SELECT 1 FROM fresh) AND (${P.given}::uuid IS NULL OR s.organisation_id = ${P.given}::uuid)
     AND (${P.customerId}::text IS NULL OR ${accessSql.isCustomerOf('s.organisation_id', `${P.customerId}::text`)})`,
  )}),
  effect AS (SELECT organisation_id, 'processed' AS status, NULL::text AS reason FROM applied)`;

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
