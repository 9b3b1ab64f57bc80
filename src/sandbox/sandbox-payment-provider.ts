import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { isPaidTier } from '../config/tiers';
import { providerCalls } from '../common/metrics';
import {
  CheckoutSessionInfo,
  CreateCheckoutInput,
  CustomerInfo,
  InvoicePreview,
  ItemChange,
  MeterEventInput,
  PackCheckoutInput,
  PaymentProvider,
  PaymentProviderError,
  PlanItem,
  PriceInfo,
  PROVIDER_PAGE_SIZE,
  ProviderPage,
  RechargeCharge,
  RechargeChargeInput,
} from '../provider/payment-provider.port';
import { idOf, ProviderEvent } from '../provider/provider-event';
import { meterTimestampProblem } from '../provider/meter-rules';
import {
  nowSeconds,
  packPriceObject,
  parseSandboxPackPriceId,
  parseSandboxPriceId,
  priceObject,
  SANDBOX_CURRENCIES,
  SANDBOX_CURRENCY,
  sandboxPackPriceId,
  currencyAmounts,
  SANDBOX_PACK_PRICE,
  sandboxAmount,
  unitAmount,
  SandboxPlan,
  sandboxPriceIds,
  scheduleObject,
} from './provider-events';
import { SandboxDelivery } from './sandbox-delivery';
import { SandboxSubscriptions } from './sandbox-subscriptions';
import { SandboxStore } from './sandbox.store';
import { SandboxUrls } from './sandbox-urls';

/**
 * The payment provider used when PAYPROVIDER_SECRET_KEY is unset: sessions live in our own database and
 * their pages are served by the service (see sandbox.controller.ts). No money moves.
 */
@Injectable()
export class SandboxPaymentProvider extends PaymentProvider {
  readonly name = 'sandbox';
  readonly requiresPriceIds = false;

  constructor(
    private readonly store: SandboxStore,
    private readonly subscriptions: SandboxSubscriptions,
    private readonly delivery: SandboxDelivery,
    private readonly urls: SandboxUrls,
    private readonly config: AppConfig,
  ) {
    super();
  }

  tierPriceIds(tier: string): string[] {
    return sandboxPriceIds(tier);
  }

  /** The sandbox prices every credit pack of the table itself: one one-time price each. */
  packPriceIds(pack: string): string[] {
    return Object.hasOwn(this.config.creditPacks, pack) ? [sandboxPackPriceId(pack)] : [];
  }

  /** The sandbox's own prices (provider-events.ts): one monthly and one yearly for each paid tier, one per credit pack. */
  retrievePrice(priceId: string): Promise<PriceInfo> {
    return this.call('prices.retrieve', async () => {
      const pack = parseSandboxPackPriceId(priceId);
      if (pack !== undefined && Object.hasOwn(this.config.creditPacks, pack)) {
        const p = packPriceObject(pack);
        return { id: p.id, active: p.active, unitAmount: p.unit_amount, currency: p.currency, recurring: null, currencyOptions: currencyAmounts((c) => sandboxAmount(SANDBOX_PACK_PRICE, c)) };
      }
      const parsed = parseSandboxPriceId(priceId);
      if (!parsed || !isPaidTier(this.config.tiers, parsed.tier)) throw new PaymentProviderError('not_found', `No such price: '${priceId}'`);
      const p = priceObject(parsed.tier, parsed.interval);
      return {
        id: p.id,
        active: p.active,
        unitAmount: p.unit_amount,
        currency: p.currency,
        recurring: { interval: p.recurring.interval, intervalCount: p.recurring.interval_count },
        currencyOptions: currencyAmounts((c) => unitAmount(parsed.tier, parsed.interval, c)),
      };
    });
  }

  retrieveCheckoutSession(sessionId: string): Promise<CheckoutSessionInfo> {
    return this.call('checkout.sessions.retrieve', async () => {
      const s = await this.store.findCheckout(sessionId);
      if (!s) throw new PaymentProviderError('not_found', `No such checkout session: ${sessionId}`);
      const expired = s.status === 'open' && s.expiresAt <= nowSeconds();
      return {
        id: s.id,
        paymentStatus: s.paymentStatus,
        status: expired ? 'expired' : s.status,
        amountTotal: s.amountTotal,
        currency: s.currency,
        created: s.created,
        metadata: s.metadata,
        clientReferenceId: s.clientReferenceId,
        customerId: s.customerId,
        subscriptionId: s.subscriptionId,
      };
    });
  }

  createCheckoutSession(input: CreateCheckoutInput): Promise<{ id: string; url: string }> {
    return this.call('checkout.sessions.create', async () => {
      // Like the provider: a customer it does not know is refused, naming the parameter.
      if (input.customerId && !(await this.store.customerExists(input.customerId))) {
        throw new PaymentProviderError('not_found', `No such customer: '${input.customerId}'`, 'customer');
      }
      const currency = sessionCurrency(input.currency);
      const s = await this.store.createCheckout({
        currency,
        tier: input.tier,
        interval: (input.priceId && parseSandboxPriceId(input.priceId)?.interval) || 'month',
        quantity: input.quantity,
        trialDays: input.trialDays,
        paymentMethodCollection: input.trialWithoutPaymentMethod ? 'if_required' : 'always',
        metadata: { organisation_id: input.organisationId, tier: input.tier },
        clientReferenceId: input.organisationId,
        customerId: input.customerId,
        successUrl: input.successUrl,
        cancelUrl: input.cancelUrl,
      });
      return { id: s.id, url: this.urls.page(`/sandbox/checkout/${s.id}`) };
    });
  }

  createPackCheckoutSession(input: PackCheckoutInput): Promise<{ id: string; url: string }> {
    return this.call('checkout.sessions.create', async () => {
      if (!(await this.store.customerExists(input.customerId))) {
        throw new PaymentProviderError('not_found', `No such customer: '${input.customerId}'`, 'customer');
      }
      const currency = sessionCurrency(input.currency);
      const s = await this.store.createPackCheckout({
        pack: input.pack,
        quantity: input.quantity,
        currency,
        metadata: input.metadata,
        clientReferenceId: input.organisationId,
        customerId: input.customerId,
        successUrl: input.successUrl,
        cancelUrl: input.cancelUrl,
      });
      return { id: s.id, url: this.urls.page(`/sandbox/checkout/${s.id}`) };
    });
  }

  createCustomer(organisationId: string): Promise<{ id: string }> {
    return this.call('customers.create', async () => ({ id: (await this.store.createCustomer({ organisation_id: organisationId })).id }));
  }

  retrieveCustomer(customerId: string): Promise<CustomerInfo> {
    return this.call('customers.retrieve', async () => {
      const customer = await this.store.findCustomer(customerId);
      if (!customer) throw new PaymentProviderError('not_found', `No such customer: '${customerId}'`, 'customer');
      return { id: customer.id, defaultPaymentMethod: customer.defaultPaymentMethod };
    });
  }

  chargeRecharge(input: RechargeChargeInput): Promise<RechargeCharge> {
    return this.call('invoices.pay', async () => {
      const charged = await this.store.chargeRecharge(
        { rechargeId: input.rechargeId, customerId: input.customerId, pack: input.pack, metadata: input.metadata },
        (invoiceId) => this.urls.page(`/sandbox/invoices/${invoiceId}`),
      );
      if (!charged) throw new PaymentProviderError('not_found', `No such customer: '${input.customerId}'`, 'customer');
      if (charged.noCard) throw new PaymentProviderError('rejected', 'This customer has no attached payment source or default payment method.');
      this.delivery.deliverLater(charged.invoiceId);
      return charged.paid ? { invoiceId: charged.invoiceId, paid: true } : { invoiceId: charged.invoiceId, paid: false, error: charged.error! };
    });
  }

  expireCheckoutSession(sessionId: string): Promise<void> {
    return this.call('checkout.sessions.expire', async () => {
      const outcome = await this.store.expireCheckout(sessionId);
      if (outcome === 'not_found') throw new PaymentProviderError('not_found', `No such checkout session: '${sessionId}'`);
      if (outcome === 'not_open') {
        throw new PaymentProviderError('rejected', 'Only Checkout Sessions with a status in ["open"] can be expired.');
      }
    });
  }

  createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }> {
    return this.call('billing_portal.sessions.create', async () => {
      const portal = await this.store.createPortal(customerId, returnUrl);
      if (!portal) throw new PaymentProviderError('not_found', `No such customer: ${customerId}`);
      return { url: this.urls.page(`/sandbox/portal/${portal.id}`) };
    });
  }

  retrieveSubscription(subscriptionId: string): Promise<Record<string, any>> {
    return this.call('subscriptions.retrieve', async () => {
      const subscription = await this.store.findSubscription(subscriptionId);
      if (!subscription) throw new PaymentProviderError('not_found', `No such subscription: ${subscriptionId}`);
      return subscription;
    });
  }

  listEvents(query: { types: readonly string[]; createdGte: number; startingAfter?: string }): Promise<ProviderPage<ProviderEvent>> {
    return this.call('events.list', async () =>
      page(await this.store.listEvents(query.types, query.createdGte, query.startingAfter, PROVIDER_PAGE_SIZE + 1)),
    );
  }

  listSubscriptions(query: { startingAfter?: string }): Promise<ProviderPage<Record<string, any>>> {
    return this.call('subscriptions.list', async () => page(await this.store.listSubscriptions(query.startingAfter, PROVIDER_PAGE_SIZE + 1)));
  }

  // Subscription changes (spec §11.4), with the sandbox's own money (sandbox-billing.ts). Their events are
  // delivered after the answer, as the provider's are; the service applies the answer itself.
  previewItemChange(subscriptionId: string, change: ItemChange & { when: 'now' | 'period_end' }): Promise<InvoicePreview> {
    return this.call('invoices.create_preview', async () => {
      const plan = await this.planOf(subscriptionId, change);
      const preview = await this.subscriptions.preview(subscriptionId, plan, { atPeriodEnd: change.when === 'period_end', prorationDate: change.prorationDate });
      return {
        amountDue: preview.amountDue,
        currency: preview.currency,
        lines: preview.lines.map((l) => ({ description: l.description, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd })),
      };
    });
  }

  changeItemNow(subscriptionId: string, change: ItemChange): Promise<Record<string, any>> {
    return this.call('subscriptions.update', async () => {
      const plan = await this.planOf(subscriptionId, change);
      return this.delivered(subscriptionId, this.subscriptions.changeNow(subscriptionId, subscriptionId, plan, { prorationDate: change.prorationDate }));
    });
  }

  /**
   * The sandbox's prices are its tiers' own, the same in every plan version: a price of the subscription's own
   * plan changes nothing; another is a change of plan, which the sandbox makes only through changeItemNow.
   */
  changeItemPrice(subscriptionId: string, change: { itemId: string; price: string }): Promise<Record<string, any>> {
    return this.call('subscriptions.update', async () => {
      const current = await this.subscriptions.find(subscriptionId);
      if (!current) throw new PaymentProviderError('not_found', `No such subscription: '${subscriptionId}'`, 'subscription');
      const item = current.object.items.data[0];
      if (item.id !== change.itemId) throw new PaymentProviderError('rejected', `No such subscription item: '${change.itemId}'`, 'items[0][id]');
      if (idOf(item.price) !== change.price) {
        throw new PaymentProviderError('rejected', `The sandbox changes a subscription's plan only with proration: '${change.price}' is another plan.`, 'items[0][price]');
      }
      return current.object;
    });
  }

  scheduleItemChange(subscriptionId: string, change: { scheduleId: string | null; next: PlanItem }): Promise<Record<string, any>> {
    return this.call('subscription_schedules.update', async () => {
      const current = await this.subscriptions.find(subscriptionId);
      if (current && (current.object.schedule ?? null) !== change.scheduleId) {
        throw new PaymentProviderError('rejected', `The subscription's schedule is ${current.object.schedule ?? 'none'}, not ${change.scheduleId ?? 'none'}.`, 'schedule');
      }
      const schedule = await this.subscriptions.schedule(subscriptionId, subscriptionId, this.planOfItem(change.next));
      this.delivery.deliverLater(subscriptionId);
      return scheduleObject(schedule);
    });
  }

  retrieveSchedule(scheduleId: string): Promise<Record<string, any>> {
    return this.call('subscription_schedules.retrieve', async () => {
      const schedule = await this.store.findSchedule(scheduleId);
      if (!schedule) throw new PaymentProviderError('not_found', `No such subscription schedule: '${scheduleId}'`);
      return scheduleObject(schedule);
    });
  }

  releaseSchedule(scheduleId: string): Promise<Record<string, any>> {
    return this.call('subscription_schedules.release', async () => {
      // Its events go with the subscription's others, in one order.
      const subscriptionId = (await this.store.findSchedule(scheduleId))?.subscriptionId ?? scheduleId;
      const schedule = await this.subscriptions.releaseSchedule(subscriptionId, scheduleId);
      this.delivery.deliverLater(subscriptionId);
      return scheduleObject(schedule);
    });
  }

  setCancelAtPeriodEnd(subscriptionId: string, cancel: boolean): Promise<Record<string, any>> {
    return this.call('subscriptions.update', () =>
      this.delivered(subscriptionId, this.subscriptions.setCancelAtPeriodEnd(subscriptionId, subscriptionId, cancel)),
    );
  }

  /** The subscription after a change, once its events are stored; they are delivered in the background. */
  private async delivered(sourceId: string, change: Promise<{ subscription: Record<string, any> }>): Promise<Record<string, any>> {
    const { subscription } = await change;
    this.delivery.deliverLater(sourceId);
    return subscription;
  }

  /** The plan an item change asks for; the item must be the subscription's (the provider's 400 otherwise). */
  private async planOf(subscriptionId: string, change: ItemChange): Promise<SandboxPlan> {
    const current = await this.subscriptions.find(subscriptionId);
    if (!current) throw new PaymentProviderError('not_found', `No such subscription: '${subscriptionId}'`, 'subscription');
    if (current.object.items.data[0].id !== change.itemId) {
      throw new PaymentProviderError('rejected', `No such subscription item: '${change.itemId}'`, 'items[0][id]');
    }
    return this.planOfItem(change.item);
  }

  private planOfItem(item: PlanItem): SandboxPlan {
    const price = parseSandboxPriceId(item.price);
    if (!price || !isPaidTier(this.config.tiers, price.tier)) throw new PaymentProviderError('rejected', `No such price: '${item.price}'`, 'items[0][price]');
    if (!Number.isSafeInteger(item.quantity) || item.quantity < 1) {
      throw new PaymentProviderError('rejected', 'Invalid positive integer', 'items[0][quantity]');
    }
    return { ...price, quantity: item.quantity };
  }

  /** Times the call like the real adapter does; a database failure here is the provider being unavailable. */
  /** Kept in the sandbox's own table and shown on its invoice pages; the provider's timestamp limits apply. */
  reportMeterEvent(e: MeterEventInput): Promise<'created' | 'duplicate'> {
    return this.call('billing.meter_events.create', async () => {
      const problem = meterTimestampProblem(e.timestamp, nowSeconds());
      if (problem) throw new PaymentProviderError('rejected', problem, 'timestamp');
      return this.store.recordMeterEvent({ identifier: e.identifier, eventName: e.eventName, customerId: e.customerId, value: e.value, timestamp: e.timestamp });
    });
  }

  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    let outcome = 'ok';
    try {
      return await fn();
    } catch (err) {
      const error = err instanceof PaymentProviderError ? err : new PaymentProviderError('unavailable', `sandbox: ${(err as Error).message}`);
      outcome = error.kind;
      throw error;
    } finally {
      providerCalls.observe({ operation, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }
}

/** A page from one row more than a page: the extra row only says that there are more. */
function page<T>(rows: T[]): ProviderPage<T> {
  return { data: rows.slice(0, PROVIDER_PAGE_SIZE), hasMore: rows.length > PROVIDER_PAGE_SIZE };
}

/** A session's currency (lower case), refused as the provider refuses one its prices lack (a 400 naming `currency`). */
function sessionCurrency(currency = SANDBOX_CURRENCY): string {
  if (SANDBOX_CURRENCIES.includes(currency)) return currency;
  throw new PaymentProviderError('rejected', `The price specified supports currencies of \`${SANDBOX_CURRENCIES.join('`, `')}\` which doesn't include the expected currency of \`${currency}\`.`, 'currency');
}
