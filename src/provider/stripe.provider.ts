import { Logger } from '@nestjs/common';
import Stripe from 'stripe';
import { AppConfig } from '../config/app-config';
import { providerCalls } from '../common/metrics';
import {
  CheckoutSessionInfo,
  CreateCheckoutInput,
  CustomerInfo,
  InvoicePreview,
  MeterEventInput,
  ItemChange,
  PackCheckoutInput,
  PaymentProvider,
  PaymentProviderError,
  PaymentProviderErrorKind,
  PlanItem,
  PriceInfo,
  PROVIDER_PAGE_SIZE,
  ProviderPage,
  RechargeCharge,
  RechargeChargeInput,
} from './payment-provider.port';
import { ProviderBudget, ProviderBudgetExhausted, ProviderPriority } from './provider-budget';
import { ProviderEvent } from './provider-event';
import { requestPace } from './request-pace';

/**
 * Each operation's place in the shared request budget (provider-budget.ts): a person paying or managing a plan
 * first. An operation not listed here (listings, meter reports, the plan list's prices) is background work.
 */
const PRIORITY: Record<string, ProviderPriority> = {
  'checkout_session.create': 'interactive',
  'checkout_session.expire': 'interactive',
  'portal_session.create': 'interactive',
  'customer.create': 'interactive',
  'customer.retrieve': 'interactive',
  'checkout_session.retrieve': 'read',
  'subscription.retrieve': 'read',
  'subscription.update': 'interactive',
  'subscription_schedule.create': 'interactive',
  'subscription_schedule.retrieve': 'interactive',
  'subscription_schedule.update': 'interactive',
  'subscription_schedule.release': 'interactive',
  // A person waits on it, but it changes nothing and can be asked for again and again.
  'invoice.create_preview': 'read',
};

/**
 * The payment-provider port over the official `stripe` SDK: the only file that calls the provider's API.
 * Every SDK error leaves here as a PaymentProviderError, so no SDK type reaches the services.
 */
export class StripePaymentProvider extends PaymentProvider {
  readonly name = 'stripe';
  readonly requiresPriceIds = true;
  private readonly logger = new Logger('StripePaymentProvider');
  private readonly stripe: Stripe;

  constructor(
    private readonly config: AppConfig,
    private readonly budget: ProviderBudget,
  ) {
    super();
    const api = config.providerApiUrl;
    this.stripe = new Stripe(config.providerSecretKey!, {
      // Pinned so an SDK upgrade that moves the API version is a visible, reviewed change.
      apiVersion: '2026-10-28.endive',
      host: api.hostname,
      port: api.port || (api.protocol === 'https:' ? 443 : 80),
      protocol: api.protocol === 'https:' ? 'https' : 'http',
      timeout: config.providerTimeoutMs,
      // Retries back off 0.5 s, 1 s: a stuck provider costs a user at most ~3 timeouts.
      maxNetworkRetries: 2,
      appInfo: { name: 'billing-licensing-service' },
      httpClient: new PacedHttpClient(),
    });
  }

  tierPriceIds(tier: string): string[] {
    return this.config.providerPrices[tier] ?? [];
  }

  retrievePrice(priceId: string): Promise<PriceInfo> {
    return this.call('price.retrieve', async () => {
      // currency_options is includable only: without the expansion the provider leaves it out.
      const p = await this.stripe.prices.retrieve(priceId, { expand: ['currency_options'] });
      const options = Object.entries(p.currency_options ?? {}).map(([currency, o]) => [currency.toLowerCase(), o.unit_amount] as const);
      return {
        id: p.id,
        active: p.active,
        unitAmount: p.unit_amount,
        currency: p.currency,
        recurring: p.recurring && { interval: p.recurring.interval, intervalCount: p.recurring.interval_count },
        currencyOptions: Object.fromEntries([[p.currency.toLowerCase(), p.unit_amount], ...options]),
      };
    });
  }

  retrieveCheckoutSession(sessionId: string): Promise<CheckoutSessionInfo> {
    return this.call('checkout_session.retrieve', async () => {
      const s = await this.stripe.checkout.sessions.retrieve(sessionId);
      return {
        id: s.id,
        paymentStatus: s.payment_status,
        status: s.status,
        amountTotal: s.amount_total,
        currency: s.currency,
        created: s.created,
        metadata: s.metadata ?? {},
        clientReferenceId: s.client_reference_id,
        customerId: idOf(s.customer),
        subscriptionId: idOf(s.subscription),
      };
    });
  }

  createCheckoutSession(input: CreateCheckoutInput): Promise<{ id: string; url: string }> {
    const priceId = input.priceId;
    if (!priceId) throw new PaymentProviderError('rejected', `no price id for tier ${input.tier}`);
    return this.call('checkout_session.create', async () => {
      const metadata = { organisation_id: input.organisationId, tier: input.tier };
      const trial = input.trialDays > 0;
      const s = await this.stripe.checkout.sessions.create({
        mode: 'subscription',
        line_items: [{ price: priceId, quantity: input.quantity }],
        ...(input.currency ? { currency: input.currency } : {}),
        client_reference_id: input.organisationId,
        customer: input.customerId,
        metadata,
        subscription_data: {
          metadata,
          ...(trial ? { trial_period_days: input.trialDays } : {}),
          ...(trial && input.trialWithoutPaymentMethod ? { trial_settings: { end_behavior: { missing_payment_method: 'cancel' } } } : {}),
        },
        ...(trial && input.trialWithoutPaymentMethod ? { payment_method_collection: 'if_required' } : {}),
        ...(input.allowPromotionCodes ? { allow_promotion_codes: true } : {}),
        ...(input.automaticTax
          ? {
              automatic_tax: { enabled: true },
              tax_id_collection: { enabled: true },
              ...(input.customerId ? { customer_update: { address: 'auto', name: 'auto' } } : {}),
            }
          : {}),
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
      });
      if (!s.url) throw new PaymentProviderError('rejected', `checkout session ${s.id} came back without a url`);
      return { id: s.id, url: s.url };
    });
  }

  packPriceIds(pack: string): string[] {
    return this.config.providerPackPrices[pack] ?? [];
  }

  createPackCheckoutSession(input: PackCheckoutInput): Promise<{ id: string; url: string }> {
    const priceId = input.priceId;
    if (!priceId) throw new PaymentProviderError('rejected', `no price id for credit pack ${input.pack}`);
    return this.call('checkout_session.create', async () => {
      const s = await this.stripe.checkout.sessions.create({
        mode: 'payment',
        line_items: [{ price: priceId, quantity: input.quantity }],
        ...(input.currency ? { currency: input.currency } : {}),
        client_reference_id: input.organisationId,
        customer: input.customerId,
        metadata: input.metadata,
        // The buyer gets an invoice; its metadata names the organisation like the session's.
        invoice_creation: { enabled: true, invoice_data: { metadata: input.metadata } },
        ...(input.allowPromotionCodes ? { allow_promotion_codes: true } : {}),
        ...(input.automaticTax
          ? { automatic_tax: { enabled: true }, tax_id_collection: { enabled: true }, customer_update: { address: 'auto', name: 'auto' } }
          : {}),
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
      });
      if (!s.url) throw new PaymentProviderError('rejected', `checkout session ${s.id} came back without a url`);
      return { id: s.id, url: s.url };
    });
  }

  createCustomer(organisationId: string): Promise<{ id: string }> {
    return this.call('customer.create', async () => {
      const c = await this.stripe.customers.create({ metadata: { organisation_id: organisationId } });
      return { id: c.id };
    });
  }

  retrieveCustomer(customerId: string): Promise<CustomerInfo> {
    return this.call('customer.retrieve', async () => {
      const c = await this.stripe.customers.retrieve(customerId);
      // The provider still answers a deleted customer, as a stub: nobody can be charged through it.
      if (c.deleted) throw new PaymentProviderError('not_found', `No such customer: '${customerId}' (deleted)`, 'customer');
      return { id: c.id, defaultPaymentMethod: idOf(c.invoice_settings?.default_payment_method ?? null) ?? idOf(c.default_source ?? null) };
    });
  }

  chargeRecharge(input: RechargeChargeInput): Promise<RechargeCharge> {
    return this.call('invoice.pay', async () => {
      if (!input.priceId) throw new PaymentProviderError('rejected', `the credit pack ${input.pack} has no price`);
      const priceId = input.priceId;
      const key = (step: string) => ({ idempotencyKey: `recharge_${input.rechargeId}_${step}` });
      // The invoice first, then the item on it (`invoice`): the customer's other pending items stay where they are.
      const draft = await this.stripe.invoices.create(
        { customer: input.customerId, auto_advance: false, collection_method: 'charge_automatically', pending_invoice_items_behavior: 'exclude', metadata: input.metadata },
        key('invoice'),
      );
      const invoiceId = draft.id!;
      await this.stripe.invoiceItems.create({ customer: input.customerId, invoice: invoiceId, pricing: { price: priceId }, metadata: input.metadata }, key('item'));
      await this.stripe.invoices.finalizeInvoice(invoiceId, { auto_advance: false }, key('finalize'));
      try {
        const paid = await this.stripe.invoices.pay(invoiceId, { off_session: true }, key('pay'));
        return paid.status === 'paid' ? { invoiceId, paid: true } : { invoiceId, paid: false, error: `the invoice is ${paid.status}` };
      } catch (err) {
        if (err instanceof Stripe.errors.StripeCardError) return { invoiceId, paid: false, error: err.message };
        throw err;
      }
    });
  }

  expireCheckoutSession(sessionId: string): Promise<void> {
    return this.call('checkout_session.expire', async () => {
      await this.stripe.checkout.sessions.expire(sessionId);
    });
  }

  createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }> {
    return this.call('portal_session.create', async () => {
      const s = await this.stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
      return { url: s.url };
    });
  }

  retrieveSubscription(subscriptionId: string): Promise<Record<string, any>> {
    return this.call('subscription.retrieve', async () => {
      return plain(await this.stripe.subscriptions.retrieve(subscriptionId));
    });
  }

  listEvents(query: { types: readonly string[]; createdGte: number; startingAfter?: string }): Promise<ProviderPage<ProviderEvent>> {
    return this.call('event.list', async () => {
      const page = await this.stripe.events.list({
        types: [...query.types],
        created: { gte: query.createdGte },
        limit: PROVIDER_PAGE_SIZE,
        starting_after: query.startingAfter,
      });
      return { data: page.data as unknown as ProviderEvent[], hasMore: page.has_more };
    });
  }

  listSubscriptions(query: { startingAfter?: string }): Promise<ProviderPage<Record<string, any>>> {
    return this.call('subscription.list', async () => {
      const page = await this.stripe.subscriptions.list({
        status: 'all',
        limit: PROVIDER_PAGE_SIZE,
        starting_after: query.startingAfter,
        // The schedule holds a pending change (spec §11.4): expanded, it costs no request of its own.
        expand: ['data.schedule'],
      });
      return { data: page.data as unknown as Record<string, any>[], hasMore: page.has_more };
    });
  }

  previewItemChange(subscriptionId: string, change: ItemChange & { when: 'now' | 'period_end' }): Promise<InvoicePreview> {
    return this.call('invoice.create_preview', async () => {
      const invoice = await this.stripe.invoices.createPreview({
        subscription: subscriptionId,
        subscription_details: {
          items: [{ id: change.itemId, ...change.item }],
          // 'now': the invoice an upgrade makes at once; 'period_end': the next one, at the new price.
          proration_behavior: change.when === 'now' ? 'always_invoice' : 'none',
          proration_date: change.prorationDate,
        },
      });
      return {
        amountDue: invoice.amount_due,
        currency: invoice.currency,
        lines: invoice.lines.data.map((l) => ({ description: l.description, amount: l.amount, periodStart: l.period.start, periodEnd: l.period.end })),
      };
    });
  }

  changeItemNow(subscriptionId: string, change: ItemChange, idempotencyKey?: string): Promise<Record<string, any>> {
    return this.call('subscription.update', async () =>
      plain(
        await this.stripe.subscriptions.update(
          subscriptionId,
          {
            items: [{ id: change.itemId, ...change.item }],
            proration_behavior: 'always_invoice',
            payment_behavior: 'pending_if_incomplete',
            proration_date: change.prorationDate,
          },
          keyed(idempotencyKey, 'update'),
        ),
      ),
    );
  }

  changeItemPrice(subscriptionId: string, change: { itemId: string; price: string }, idempotencyKey?: string): Promise<Record<string, any>> {
    return this.call('subscription.update', async () =>
      plain(
        await this.stripe.subscriptions.update(
          subscriptionId,
          { items: [{ id: change.itemId, price: change.price }], proration_behavior: 'none' },
          keyed(idempotencyKey, 'update'),
        ),
      ),
    );
  }

  async scheduleItemChange(
    subscriptionId: string,
    change: { scheduleId: string | null; next: PlanItem },
    idempotencyKey?: string,
  ): Promise<Record<string, any>> {
    const scheduleId = change.scheduleId;
    const schedule = scheduleId
      ? await this.call('subscription_schedule.retrieve', () => this.stripe.subscriptionSchedules.retrieve(scheduleId))
      : await this.call('subscription_schedule.create', () =>
          this.stripe.subscriptionSchedules.create({ from_subscription: subscriptionId }, keyed(idempotencyKey, 'create')),
        );
    // The provider refuses phases that rewrite the past: the current phase goes back as it is.
    const current = schedule.phases.find((p) => p.start_date === schedule.current_phase?.start_date) ?? schedule.phases[0];
    return this.call('subscription_schedule.update', async () =>
      plain(
        await this.stripe.subscriptionSchedules.update(schedule.id, {
          end_behavior: 'release',
          proration_behavior: 'none',
          phases: [
            {
              items: current.items.map((i) => ({ price: idOf(i.price)!, quantity: i.quantity })),
              start_date: current.start_date,
              end_date: current.end_date,
            },
            { items: [change.next] },
          ],
        }, keyed(idempotencyKey, 'update')),
      ),
    );
  }

  retrieveSchedule(scheduleId: string): Promise<Record<string, any>> {
    return this.call('subscription_schedule.retrieve', async () => plain(await this.stripe.subscriptionSchedules.retrieve(scheduleId)));
  }

  releaseSchedule(scheduleId: string, idempotencyKey?: string): Promise<Record<string, any>> {
    return this.call('subscription_schedule.release', async () =>
      plain(await this.stripe.subscriptionSchedules.release(scheduleId, {}, keyed(idempotencyKey, 'release'))),
    );
  }

  setCancelAtPeriodEnd(subscriptionId: string, cancel: boolean, idempotencyKey?: string): Promise<Record<string, any>> {
    return this.call('subscription.update', async () =>
      plain(await this.stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: cancel }, keyed(idempotencyKey, 'update'))),
    );
  }

  reportMeterEvent(e: MeterEventInput): Promise<'created' | 'duplicate'> {
    return this.call('meter_event.create', async () => {
      try {
        await this.stripe.billing.meterEvents.create(
          {
            event_name: e.eventName,
            payload: { stripe_customer_id: e.customerId, value: String(e.value) },
            identifier: e.identifier,
            timestamp: e.timestamp,
          },
          // The job queue retries, later and honouring Retry-After; the SDK's own retries would come within 2 s.
          { maxNetworkRetries: 0 },
        );
        return 'created';
      } catch (err) {
        // The provider refuses an identifier it already has (400, "An event already exists with identifier …").
        if (err instanceof Stripe.errors.StripeInvalidRequestError && /already exists with identifier/i.test(err.message)) return 'duplicate';
        // A key the provider refuses is this service's configuration, not the window's: it may be fixed.
        if (err instanceof Stripe.errors.StripeAuthenticationError || err instanceof Stripe.errors.StripePermissionError) {
          throw new PaymentProviderError('unavailable', `the provider refused the API key: ${err.message}`);
        }
        throw err;
      }
    });
  }

  /**
   * Waits for a slot in the request budget, times the call, maps failures onto the port's error kinds, and logs
   * what an operator needs.
   */
  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      // Whatever the operation, a call of the reconciliation (which runs under a RequestPace) can wait.
      await this.budget.take(requestPace() ? 'background' : (PRIORITY[operation] ?? 'background'));
      const result = await fn();
      providerCalls.observe({ operation, outcome: 'ok' }, seconds());
      return result;
    } catch (err) {
      const mapped = toPortError(err);
      providerCalls.observe({ operation, outcome: mapped.kind }, seconds());
      if (mapped.kind !== 'not_found') {
        // Only selected fields: an SDK error also carries request headers, which we never log whole.
        const e = err as Partial<Stripe.errors.StripeError>;
        this.logger.warn({
          msg: 'payment provider call failed',
          operation,
          kind: mapped.kind,
          status: e.statusCode,
          type: e.type,
          code: e.code,
          providerRequestId: e.requestId,
          error: mapped.message,
        });
      }
      throw mapped;
    }
  }
}

/**
 * The SDK's own HTTP client, with every request paced when the caller runs under a RequestPace (the
 * reconciliation: PROVIDER_SYNC_MAX_RPS). Here, below the SDK, its retries are paced too, and a 429's
 * `Retry-After` holds them back: the SDK itself retries a 429 after 0.5–2 s whatever the header says.
 */
class PacedHttpClient extends Stripe.HttpClient {
  private readonly http = Stripe.createNodeHttpClient();

  override getClientName(): string {
    return this.http.getClientName();
  }

  override async makeRequest(...request: Parameters<Stripe.HttpClient['makeRequest']>): Promise<Stripe.HttpClientResponse> {
    const pace = requestPace();
    if (!pace) return this.http.makeRequest(...request);
    await pace.take();
    try {
      const response = await this.http.makeRequest(...request);
      if (response.getStatusCode() === 429) pace.retryAfter(String(response.getHeaders()['retry-after'] ?? ''));
      return response;
    } finally {
      pace.done();
    }
  }
}

/** The SDK's object is the API's JSON plus a `lastResponse` property: a plain copy, in the provider's shape. */
function plain(object: object & { lastResponse?: unknown }): Record<string, any> {
  const { lastResponse: _, ...rest } = object;
  return rest as Record<string, any>;
}

/**
 * The request options of one step of a keyed change: each of its requests has a key of its own, derived from the
 * change's, so asking again with the change's key asks each step again with its own. Without one the SDK makes
 * a key per call (kept across its own retries).
 */
function keyed(idempotencyKey: string | undefined, step: string): Stripe.RequestOptions | undefined {
  return idempotencyKey === undefined ? undefined : { idempotencyKey: `${idempotencyKey}:${step}` };
}

function idOf(value: string | { id: string } | null): string | null {
  return typeof value === 'string' ? value : (value?.id ?? null);
}

export function toPortError(err: unknown): PaymentProviderError {
  if (err instanceof PaymentProviderError) return err;
  if (err instanceof ProviderBudgetExhausted) return new PaymentProviderError('rate_limited', err.message, undefined, err.retryAfterS);
  if (!(err instanceof Stripe.errors.StripeError)) {
    return new PaymentProviderError('unavailable', err instanceof Error ? err.message : String(err));
  }
  const kind = kindOf(err);
  // The provider's 429 usually says no Retry-After (its limits are per second): then 1 s.
  const retryAfter = Number(err.headers?.['retry-after']);
  const retryAfterS = retryAfter > 0 ? retryAfter : kind === 'rate_limited' ? 1 : undefined;
  return new PaymentProviderError(kind, err.message, err.param, retryAfterS, outcomeUnknown(err));
}

/**
 * A request that timed out, or whose connection closed before the answer, may have been carried out (the SDK
 * says as much of a closed connection); the provider answers 409 `idempotency_key_in_use` while it is still
 * carrying out the first request of a key (the SDK's retry of a request that timed out meets exactly that).
 */
function outcomeUnknown(err: InstanceType<typeof Stripe.errors.StripeError>): boolean {
  if (err instanceof Stripe.errors.StripeConnectionError) {
    const code = (err.detail as { code?: string } | undefined)?.code;
    return code === 'ETIMEDOUT' || code === 'ECONNRESET' || code === 'EPIPE';
  }
  return err.statusCode === 409 && err.code === 'idempotency_key_in_use';
}

function kindOf(err: InstanceType<typeof Stripe.errors.StripeError>): PaymentProviderErrorKind {
  const status = err.statusCode;
  if (err instanceof Stripe.errors.StripeConnectionError || status === undefined) return 'unavailable';
  if (status === 429) return 'rate_limited';
  if (err.code === 'idempotency_key_in_use') return 'unavailable';
  if (status >= 500) return 'unavailable';
  if (status === 404 || err.code === 'resource_missing') return 'not_found';
  if (err instanceof Stripe.errors.StripeCardError) return 'payment_failed';
  if (err.code === 'customer_tax_location_invalid') return 'tax_location_invalid';
  return 'rejected';
}
