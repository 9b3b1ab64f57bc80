import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { transaction } from '../../database/transaction';
import { EVENT_TYPES, ProviderEvent } from '../provider-event';
import {
  SANDBOX_CURRENCY,
  SubscriptionState,
  addMonth,
  eventEnvelope,
  invoiceObject,
  nowSeconds,
  randomId,
  sandboxPrice,
  subscriptionObject,
} from './provider-events';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';
import { PendingEvent, PortalSubscription, SandboxRepository } from './sandbox.repository';

const CHECKOUT_TTL_S = 24 * 3600;
const PORTAL_TTL_S = 3600;

/**
 * The sandbox provider's state changes, each with the events it causes, stored in its transaction
 * (outbox); its tables through SandboxRepository.
 */
@Injectable()
export class SandboxStore {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sandbox: SandboxRepository,
  ) {}

  async createCheckout(input: {
    tier: string;
    metadata: Record<string, string>;
    clientReferenceId: string;
    customerId?: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<SandboxCheckoutSession> {
    const created = nowSeconds();
    return this.sandbox.insertCheckout({
      id: randomId('cs_test_', 58),
      tier: input.tier,
      amountTotal: sandboxPrice(input.tier),
      currency: SANDBOX_CURRENCY,
      metadata: input.metadata,
      clientReferenceId: input.clientReferenceId,
      customerId: input.customerId ?? null,
      successUrl: input.successUrl,
      cancelUrl: input.cancelUrl,
      created,
      expiresAt: created + CHECKOUT_TTL_S,
    });
  }

  customerExists(id: string): Promise<boolean> {
    return this.sandbox.customerExists(id);
  }

  async findCheckout(id: string): Promise<SandboxCheckoutSession | undefined> {
    return (await this.sandbox.findCheckout(id)) ?? undefined;
  }

  /**
   * Pays an open session: customer, subscription, invoice and their two events, in one transaction.
   * Paying a session that is already complete changes nothing (the caller re-delivers what is pending).
   */
  async completeCheckout(id: string, invoiceUrl: (invoiceId: string) => string): Promise<SandboxCheckoutSession | 'expired' | undefined> {
    return transaction(this.db, async (m) => {
      const session = await this.sandbox.lockCheckout(m, id);
      if (!session || session.status === 'complete') return session ?? undefined;
      const now = nowSeconds();
      if (session.status === 'expired' || session.expiresAt <= now) return 'expired';

      const customerId = session.customerId ?? randomId('cus_', 14);
      await this.sandbox.ensureCustomer(m, { id: customerId, created: now });
      const sub: SubscriptionState = {
        id: randomId('sub_'),
        customerId,
        itemId: randomId('si_', 14),
        tier: session.tier,
        status: 'active',
        metadata: session.metadata,
        created: now,
        periodStart: now,
        periodEnd: addMonth(now),
        canceledAt: null,
      };
      await this.sandbox.insertSubscription(m, fromState(sub, now));
      const invoice: SandboxInvoice = {
        id: randomId('in_'),
        customerId,
        subscriptionId: sub.id,
        tier: sub.tier,
        amountPaid: session.amountTotal,
        currency: session.currency,
        periodStart: sub.periodStart,
        periodEnd: sub.periodEnd,
        paidAt: now,
      };
      await this.sandbox.insertInvoice(m, invoice);
      const invoiceEvent = invoiceObject({
        ...invoice,
        subscriptionMetadata: sub.metadata,
        itemId: sub.itemId,
        hostedInvoiceUrl: invoiceUrl(invoice.id),
      });
      await this.sandbox.addEvent(m, id, eventEnvelope(EVENT_TYPES.subscriptionCreated, subscriptionObject(sub), now));
      await this.sandbox.addEvent(m, id, eventEnvelope(EVENT_TYPES.invoicePaymentSucceeded, invoiceEvent, now));
      return this.sandbox.markCheckoutPaid(m, id, { customerId, subscriptionId: sub.id });
    });
  }

  /** Like the provider: only an open session can be expired. */
  async expireCheckout(id: string): Promise<'expired' | 'not_open' | 'not_found'> {
    if (await this.sandbox.expireOpenCheckout(id, nowSeconds())) return 'expired';
    return (await this.findCheckout(id)) ? 'not_open' : 'not_found';
  }

  /** Undefined for a customer the sandbox never created (the provider answers 404 there). */
  async createPortal(customerId: string, returnUrl: string): Promise<SandboxPortalSession | undefined> {
    // Customers are never deleted: one that exists now still exists at the insert.
    if (!(await this.sandbox.customerExists(customerId))) return undefined;
    const created = nowSeconds();
    return this.sandbox.insertPortal({ id: randomId('bps_', 40), customerId, returnUrl, created, expiresAt: created + PORTAL_TTL_S });
  }

  async findPortal(id: string): Promise<SandboxPortalSession | undefined> {
    return (await this.sandbox.findPortal(id)) ?? undefined;
  }

  activeSubscriptions(customerId: string): Promise<PortalSubscription[]> {
    return this.sandbox.liveSubscriptions(customerId);
  }

  /**
   * Switches the tier (`customer.subscription.updated`) or cancels (`.deleted`) one of the portal customer's
   * live subscriptions. Returns false when the subscription is not the customer's or is already canceled.
   */
  async changeSubscription(portal: SandboxPortalSession, subscriptionId: string, change: { tier: string } | 'cancel'): Promise<boolean> {
    return transaction(this.db, async (m) => {
      const row = await this.sandbox.lockLiveSubscription(m, subscriptionId, portal.customerId);
      if (!row) return false;
      // Strictly increasing per subscription, so two changes within one second still apply in order.
      const created = Math.max(nowSeconds(), row.lastEventCreated + 1);
      const before = toState(row);
      const after: SubscriptionState =
        change === 'cancel' ? { ...before, status: 'canceled', canceledAt: created } : { ...before, tier: change.tier };
      await this.sandbox.updateSubscription(m, subscriptionId, {
        tier: after.tier,
        status: after.status,
        canceledAt: after.canceledAt,
        lastEventCreated: created,
      });
      const event =
        change === 'cancel'
          ? eventEnvelope(EVENT_TYPES.subscriptionDeleted, subscriptionObject(after), created)
          : eventEnvelope(EVENT_TYPES.subscriptionUpdated, subscriptionObject(after), created, {
              items: subscriptionObject(before).items,
            });
      await this.sandbox.addEvent(m, portal.id, event);
      return true;
    });
  }

  /** The subscription as the provider's API would return it now. */
  async findSubscription(id: string): Promise<Record<string, any> | undefined> {
    const row = await this.sandbox.findSubscription(id);
    return row ? subscriptionObject(toState(row)) : undefined;
  }

  /** A page of the sandbox's own event log as the provider's `GET /v1/events` lists it (delivered or not). */
  listEvents(types: readonly string[], createdGte: number, startingAfter: string | undefined, limit: number): Promise<ProviderEvent[]> {
    return this.sandbox.listEvents(types, createdGte, startingAfter, limit);
  }

  /** A page of every subscription as the provider's `GET /v1/subscriptions?status=all` lists them. */
  async listSubscriptions(startingAfter: string | undefined, limit: number): Promise<Record<string, any>[]> {
    return (await this.sandbox.listSubscriptions(startingAfter, limit)).map((row) => subscriptionObject(toState(row)));
  }

  async findInvoice(id: string): Promise<SandboxInvoice | undefined> {
    return (await this.sandbox.findInvoice(id)) ?? undefined;
  }

  pendingEvents(sourceId: string): Promise<PendingEvent[]> {
    return this.sandbox.pendingEvents(sourceId);
  }

  markDelivered(seq: number): Promise<void> {
    return this.sandbox.markDelivered(seq);
  }

  markFailed(seq: number, error: string): Promise<void> {
    return this.sandbox.markFailed(seq, error.slice(0, 2000));
  }
}

function toState(row: SandboxSubscription): SubscriptionState {
  return {
    id: row.id,
    customerId: row.customerId,
    itemId: row.itemId,
    tier: row.tier,
    status: row.status,
    metadata: row.metadata,
    created: row.created,
    periodStart: row.currentPeriodStart,
    periodEnd: row.currentPeriodEnd,
    canceledAt: row.canceledAt,
  };
}

function fromState(s: SubscriptionState, lastEventCreated: number): SandboxSubscription {
  const { periodStart: currentPeriodStart, periodEnd: currentPeriodEnd, ...same } = s;
  return { ...same, currentPeriodStart, currentPeriodEnd, lastEventCreated };
}
