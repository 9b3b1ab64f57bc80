import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { transaction } from '../database/transaction';
import { EVENT_TYPES, ProviderEvent } from '../provider/provider-event';
import {
  addInterval,
  trialEndOf,
  eventEnvelope,
  checkoutSessionObject,
  invoiceObject,
  nowSeconds,
  packLine,
  periodLine,
  planLabel,
  randomId,
  SANDBOX_CURRENCY,
  SANDBOX_PACK_PRICE,
  sandboxAmount,
  SandboxPlan,
  scheduleObject,
  subscriptionObject,
  SubscriptionState,
  unitAmount,
} from './provider-events';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxCustomer } from './sandbox-customer.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { SandboxMeterEvent } from './sandbox-meter-event.entity';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';
import { SandboxSchedule } from './sandbox-schedule.entity';
import { fromState, toState, TRIAL_WILL_END, TRIAL_WILL_END_S } from './sandbox-subscriptions';
import { MeterTotal, PendingEvent, SandboxRepository } from './sandbox.repository';

const CHECKOUT_TTL_S = 24 * 3600;
const PORTAL_TTL_S = 3600;
const DAY_S = 86_400;

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

  async createCheckout(input: SandboxPlan & {
    /** Lower case: one of SANDBOX_CURRENCIES; default SANDBOX_CURRENCY. */
    currency?: string;
    trialDays: number;
    paymentMethodCollection: 'always' | 'if_required';
    metadata: Record<string, string>;
    clientReferenceId: string;
    customerId?: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<SandboxCheckoutSession> {
    const created = nowSeconds();
    return this.sandbox.insertCheckout({
      id: randomId('cs_test_', 58),
      mode: 'subscription',
      pack: null,
      invoiceId: null,
      ...input,
      currency: input.currency ?? SANDBOX_CURRENCY,
      amountTotal: firstCharge({ ...input, currency: input.currency ?? SANDBOX_CURRENCY }),
      customerId: input.customerId ?? null,
      created,
      expiresAt: created + CHECKOUT_TTL_S,
    });
  }

  /** A checkout of mode payment for `quantity` credit packs, for an existing customer (spec §16.3). */
  async createPackCheckout(input: {
    pack: string;
    quantity: number;
    /** Lower case: one of SANDBOX_CURRENCIES; default SANDBOX_CURRENCY. */
    currency?: string;
    metadata: Record<string, string>;
    clientReferenceId: string;
    customerId: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<SandboxCheckoutSession> {
    const created = nowSeconds();
    return this.sandbox.insertCheckout({
      id: randomId('cs_test_', 58),
      mode: 'payment',
      tier: null,
      interval: 'month',
      trialDays: 0,
      paymentMethodCollection: 'always',
      invoiceId: null,
      ...input,
      currency: input.currency ?? SANDBOX_CURRENCY,
      amountTotal: sandboxAmount(SANDBOX_PACK_PRICE, input.currency ?? SANDBOX_CURRENCY) * input.quantity,
      created,
      expiresAt: created + CHECKOUT_TTL_S,
    });
  }

  /** A customer made through the API (a pack checkout needs one first), with no card yet. */
  async createCustomer(metadata: Record<string, string>): Promise<SandboxCustomer> {
    const customer = { id: randomId('cus_', 14), created: nowSeconds(), metadata, defaultPaymentMethod: null, declineNextCharge: false };
    await this.sandbox.ensureCustomer(this.db.manager, customer);
    return customer;
  }

  async findCustomer(id: string): Promise<SandboxCustomer | undefined> {
    return (await this.sandbox.findCustomer(this.db.manager, id)) ?? undefined;
  }

  customerExists(id: string): Promise<boolean> {
    return this.sandbox.customerExists(id);
  }

  async findCheckout(id: string): Promise<SandboxCheckoutSession | undefined> {
    return (await this.sandbox.findCheckout(this.db.manager, id)) ?? undefined;
  }

  /**
   * Pays an open session for the plan chosen on its page (a trial: adds the card, or with `card: false` starts
   * it without one when the session allows): customer, subscription, first invoice and their events, in one
   * transaction. Paying a session that is already complete changes nothing (the caller re-delivers what is
   * pending).
   */
  async completeCheckout(
    id: string,
    choice: Pick<SandboxPlan, 'interval' | 'quantity'> & { card: boolean },
    invoiceUrl: (invoiceId: string) => string,
  ): Promise<SandboxCheckoutSession | 'expired' | 'card_required' | undefined> {
    return transaction(this.db, async (m) => {
      const session = await this.sandbox.lockCheckout(m, id);
      if (!session || session.status === 'complete') return session ?? undefined;
      const now = nowSeconds();
      if (session.status === 'expired' || session.expiresAt <= now) return 'expired';
      if (session.mode === 'payment') return choice.card ? this.completePackCheckout(m, session, now, invoiceUrl) : 'card_required';
      const trial = session.trialDays > 0;
      if (!choice.card && !(trial && session.paymentMethodCollection === 'if_required')) return 'card_required';

      const customerId = session.customerId ?? randomId('cus_', 14);
      await this.sandbox.ensureCustomer(m, { id: customerId, created: now, metadata: {}, defaultPaymentMethod: null, declineNextCharge: false });
      const card = choice.card ? randomId('pm_') : null;
      if (card) await this.sandbox.saveCard(m, customerId, card);
      const plan: SandboxPlan = { tier: session.tier!, interval: choice.interval, quantity: choice.quantity };
      const periodEnd = trial ? trialEndOf(now, session.trialDays) : addInterval(now, plan.interval);
      const sub: SubscriptionState = {
        id: randomId('sub_'),
        customerId,
        itemId: randomId('si_', 14),
        ...plan,
        status: trial ? 'trialing' : 'active',
        metadata: session.metadata,
        created: now,
        periodStart: now,
        periodEnd,
        canceledAt: null,
        trialStart: trial ? now : null,
        trialEnd: trial ? periodEnd : null,
        cancelAtPeriodEnd: false,
        defaultPaymentMethod: card,
        missingPaymentMethod: session.paymentMethodCollection === 'if_required' ? 'cancel' : 'create_invoice',
        scheduleId: null,
        currency: session.currency,
      };
      const line = trial
        ? { ...periodLine(plan, now, periodEnd, session.currency), description: `Trial period for ${planLabel(plan)}`, amount: 0 }
        : periodLine(plan, now, periodEnd, session.currency);
      const events = [eventEnvelope(EVENT_TYPES.subscriptionCreated, subscriptionObject(sub), now)];
      // A trial of three days or less is announced at once, as the provider does.
      if (trial && session.trialDays * DAY_S <= TRIAL_WILL_END_S) events.push(eventEnvelope(TRIAL_WILL_END, subscriptionObject(sub), now));
      await this.sandbox.insertSubscription(m, fromState(sub, now));
      const invoice: SandboxInvoice = {
        id: randomId('in_'),
        customerId,
        subscriptionId: sub.id,
        tier: sub.tier,
        billingReason: 'subscription_create',
        status: 'paid',
        metadata: {},
        lines: [line],
        amountPaid: line.amount,
        currency: session.currency,
        periodStart: sub.periodStart,
        periodEnd: sub.periodEnd,
        created: now,
        paidAt: now,
      };
      await this.sandbox.insertInvoice(m, invoice);
      const invoiceEvent = invoiceObject({ ...invoice, subscriptionMetadata: sub.metadata, itemId: sub.itemId, hostedInvoiceUrl: invoiceUrl(invoice.id) });
      events.push(eventEnvelope(EVENT_TYPES.invoicePaymentSucceeded, invoiceEvent, now));
      for (const event of events) await this.sandbox.addEvent(m, id, event);
      return this.sandbox.markCheckoutPaid(m, id, {
        customerId,
        subscriptionId: sub.id,
        invoiceId: invoice.id,
        ...plan,
        amountTotal: line.amount,
        paymentStatus: trial ? 'no_payment_required' : 'paid',
      });
    });
  }

  /**
   * Pays a pack checkout with a card (saved as the customer's default, as a later top-up pays with it): its invoice
   * (`invoice_creation`), paid, and the provider's events: `checkout.session.completed` (paid), then `invoice.paid`.
   */
  private async completePackCheckout(
    m: EntityManager,
    session: SandboxCheckoutSession,
    now: number,
    invoiceUrl: (invoiceId: string) => string,
  ): Promise<SandboxCheckoutSession> {
    const customerId = session.customerId!;
    await this.sandbox.saveCard(m, customerId, randomId('pm_'));
    const line = packLine(session.pack!, session.quantity, now, session.currency);
    const invoice: SandboxInvoice = {
      id: randomId('in_'),
      customerId,
      subscriptionId: null,
      tier: null,
      billingReason: 'manual',
      status: 'paid',
      metadata: session.metadata,
      lines: [line],
      amountPaid: line.amount,
      currency: session.currency,
      periodStart: now,
      periodEnd: now,
      created: now,
      paidAt: now,
    };
    await this.sandbox.insertInvoice(m, invoice);
    const paid = await this.sandbox.markCheckoutPaid(m, session.id, {
      customerId,
      subscriptionId: null,
      invoiceId: invoice.id,
      interval: session.interval,
      quantity: session.quantity,
      amountTotal: line.amount,
      paymentStatus: 'paid',
    });
    const invoiceEvent = invoiceObject({ ...invoice, subscriptionMetadata: {}, itemId: null, hostedInvoiceUrl: invoiceUrl(invoice.id) });
    await this.sandbox.addEvent(m, session.id, eventEnvelope(EVENT_TYPES.checkoutSessionCompleted, checkoutSessionObject(paid), now));
    await this.sandbox.addEvent(m, session.id, eventEnvelope(EVENT_TYPES.invoicePaid, invoiceEvent, now));
    return paid;
  }

  /**
   * An automatic top-up's charge (spec §16.4), as the provider's invoice, item, finalize and pay make it: one
   * invoice of one pack per recharge (asked again, the sandbox answers what it did, as the provider's idempotency
   * keys do), paid with the customer's saved card: `invoice.paid` and `invoice.payment_succeeded`; or declined,
   * once, when the portal said so (`invoice.payment_failed`, the invoice left open). Undefined: no such customer.
   */
  async chargeRecharge(
    p: { rechargeId: string; customerId: string; pack: string; metadata: Record<string, string> },
    invoiceUrl: (invoiceId: string) => string,
  ): Promise<{ invoiceId: string; paid: boolean; error?: string; noCard?: true } | undefined> {
    const declined = 'Your card was declined.';
    return transaction(this.db, async (m) => {
      const customer = await this.sandbox.lockCustomer(m, p.customerId);
      if (!customer) return undefined;
      const done = await this.sandbox.findRechargeInvoice(m, p.rechargeId);
      if (done) return done.status === 'paid' ? { invoiceId: done.id, paid: true } : { invoiceId: done.id, paid: false, error: declined };
      const now = nowSeconds();
      const line = packLine(p.pack, 1, now);
      const invoice: SandboxInvoice = {
        id: randomId('in_'),
        customerId: p.customerId,
        subscriptionId: null,
        tier: null,
        billingReason: 'manual',
        status: 'open',
        metadata: p.metadata,
        lines: [line],
        amountPaid: line.amount,
        currency: SANDBOX_CURRENCY,
        periodStart: now,
        periodEnd: now,
        created: now,
        paidAt: null,
      };
      if (!customer.defaultPaymentMethod) return { invoiceId: '', paid: false, noCard: true };
      const decline = customer.declineNextCharge;
      if (decline) await this.sandbox.setDeclineNextCharge(m, p.customerId, false);
      else Object.assign(invoice, { status: 'paid', paidAt: now });
      await this.sandbox.insertInvoice(m, invoice);
      const object = invoiceObject({ ...invoice, subscriptionMetadata: {}, itemId: null, hostedInvoiceUrl: invoiceUrl(invoice.id) });
      await this.sandbox.addEvent(m, invoice.id, eventEnvelope('invoice.finalized', object, now));
      if (decline) {
        await this.sandbox.addEvent(m, invoice.id, eventEnvelope('invoice.payment_failed', object, now));
        return { invoiceId: invoice.id, paid: false, error: declined };
      }
      await this.sandbox.addEvent(m, invoice.id, eventEnvelope(EVENT_TYPES.invoicePaid, object, now));
      await this.sandbox.addEvent(m, invoice.id, eventEnvelope(EVENT_TYPES.invoicePaymentSucceeded, object, now));
      return { invoiceId: invoice.id, paid: true };
    });
  }

  /** The portal's "decline the next charge": the customer's next automatic charge is declined, once. */
  async declineNextCharge(customerId: string): Promise<void> {
    await this.sandbox.setDeclineNextCharge(this.db.manager, customerId, true);
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

  liveSubscriptions(customerId: string): Promise<SandboxSubscription[]> {
    return this.sandbox.liveSubscriptions(customerId);
  }

  /** The organisation's subscription (the newest live one, else the newest), for the test clock. */
  async subscriptionOf(organisationId: string): Promise<SandboxSubscription | undefined> {
    return (await this.sandbox.subscriptionOf(organisationId)) ?? undefined;
  }

  async findSchedule(id: string): Promise<SandboxSchedule | undefined> {
    return (await this.sandbox.findSchedule(this.db.manager, id)) ?? undefined;
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

  /**
   * A page of every subscription as the provider's `GET /v1/subscriptions?status=all&expand[]=data.schedule`
   * lists them: each one's schedule is the schedule object (one query for the page), or null.
   */
  async listSubscriptions(startingAfter: string | undefined, limit: number): Promise<Record<string, any>[]> {
    const rows = await this.sandbox.listSubscriptions(startingAfter, limit);
    const scheduleIds = rows.flatMap((row) => (row.scheduleId ? [row.scheduleId] : []));
    const schedules = new Map((await this.sandbox.findSchedules(scheduleIds)).map((s) => [s.id, scheduleObject(s)]));
    return rows.map((row) => {
      const subscription = subscriptionObject(toState(row));
      return row.scheduleId && schedules.has(row.scheduleId) ? { ...subscription, schedule: schedules.get(row.scheduleId) } : subscription;
    });
  }

  async findInvoice(id: string): Promise<SandboxInvoice | undefined> {
    return (await this.sandbox.findInvoice(id)) ?? undefined;
  }

  /** Keeps a billing meter event; 'duplicate' when its identifier is already kept, as the provider answers. */
  async recordMeterEvent(event: SandboxMeterEvent): Promise<'created' | 'duplicate'> {
    return (await this.sandbox.insertMeterEvent(event)) ? 'created' : 'duplicate';
  }

  /** The usage reported to the sandbox's meters within the invoice's period, per event name. */
  invoiceUsage(i: SandboxInvoice): Promise<MeterTotal[]> {
    return this.sandbox.meterTotals(i.customerId, i.periodStart, i.periodEnd);
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

/** What paying a subscription's session charges today: nothing for a trial, else a period of the plan. */
function firstCharge(s: SandboxPlan & { trialDays: number; currency: string }): number {
  return s.trialDays > 0 ? 0 : unitAmount(s.tier, s.interval, s.currency) * s.quantity;
}
