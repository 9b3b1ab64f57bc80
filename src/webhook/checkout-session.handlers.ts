import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { PACK_PURPOSE, packPurchaseOf } from '../billing/credit-purchases';
import { CreditTopUpsService } from '../billing/credit-top-ups.service';
import { AppException } from '../common/app-exception';
import { EVENT_TYPES, idOf, ProviderEvent } from '../provider/provider-event';
import { CheckoutSessionObject, checkoutSessionSchema } from '../provider/provider-objects';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, reasons } from './event-handler';
import { OrganisationLinks } from './organisation-links';

/**
 * A paid credit pack (spec §16.3): `checkout.session.completed` with `payment_status: "paid"` (a card), or
 * `checkout.session.async_payment_succeeded` (a payment method that settles later, whose `completed` said
 * `unpaid`). Either grants the session's packs, once per session whichever comes first, however often, and
 * whether delivered or pulled by provider:sync (the grant is unique per session). A subscription's session is
 * not read here: the subscription's own events shape the license.
 */
@Injectable()
abstract class PaidSessionHandler implements EventHandler<typeof checkoutSessionSchema> {
  readonly schema = checkoutSessionSchema;
  /** Whether the event says the session is paid (the async success always does). */
  protected abstract paid(session: CheckoutSessionObject): boolean;

  constructor(
    private readonly links: OrganisationLinks,
    private readonly topUps: CreditTopUpsService,
  ) {}

  providerIds(event: ProviderEvent<CheckoutSessionObject>): (string | undefined)[] {
    return [idOf(event.data.object.customer)];
  }

  async handle(manager: EntityManager, event: ProviderEvent<CheckoutSessionObject>): Promise<HandlerOutcome> {
    const session = event.data.object;
    const customerId = idOf(session.customer);
    const sessionId = idOf(session.id);
    if (!sessionId) return failed('invalid_event', 'the checkout session has no id', { customerId });
    const purchase = packPurchaseOf(session.metadata);
    if (!purchase && session.metadata?.purpose === PACK_PURPOSE) {
      return failed('invalid_event', "a credit pack's session whose metadata names no pack or no quantity of 1 to 999", { customerId });
    }
    if (!purchase) {
      const reason = session.metadata?.tier ? "a subscription's checkout: its subscription's events apply it" : 'not a checkout of this service';
      return { customerId, status: 'ignored', reason };
    }
    const match = await this.links.resolve(manager, [session.metadata?.organisation_id, session.client_reference_id], customerId, undefined);
    if (match.conflict) return failed('organisation_conflict', match.conflict, { customerId });
    const organisationId = match.organisationId;
    if (!organisationId) return { customerId, status: 'ignored', reason: reasons(match.note, 'no such organisation (deleted?): nothing to grant') };
    const ids = { customerId, organisationId };
    if (!this.paid(session)) {
      return { ...ids, status: 'processed', reason: `not paid yet (payment_status ${session.payment_status}): granted when the payment succeeds` };
    }
    let granted;
    try {
      granted = await this.topUps.grantPaidSession(manager, { organisationId, sessionId, ...purchase });
    } catch (err) {
      // A grant the tier table refuses now (the pack's metric is no longer counted per period, say): fix, then replay.
      if (err instanceof AppException) return failed('pack_unknown', `${purchase.pack}: ${err.message}`, ids);
      throw err;
    }
    if (!granted) return failed('pack_unknown', `the tier table sells no credit pack "${purchase.pack.slice(0, 64)}"`, ids);
    const { grant, created } = granted;
    const what = `${grant.amount} ${grant.metric} (grant ${grant.id})`;
    return { ...ids, status: 'processed', reason: reasons(match.note, created ? `granted ${what}` : `already granted: ${what}`) };
  }
}

@Injectable()
@HandlesEvent(EVENT_TYPES.checkoutSessionCompleted)
export class CheckoutSessionCompletedHandler extends PaidSessionHandler {
  protected paid(session: CheckoutSessionObject): boolean {
    return session.payment_status === 'paid';
  }
}

@Injectable()
@HandlesEvent(EVENT_TYPES.checkoutSessionAsyncPaymentSucceeded)
export class CheckoutSessionAsyncPaymentSucceededHandler extends PaidSessionHandler {
  protected paid(): boolean {
    return true;
  }
}
