import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { isPaidTier } from '../../config/tiers';
import { providerCalls } from '../../ops/metrics';
import {
  CheckoutSessionInfo,
  CreateCheckoutInput,
  InvoicePreview,
  ItemChange,
  PaymentProvider,
  PaymentProviderError,
  PlanItem,
  PriceInfo,
  PROVIDER_PAGE_SIZE,
  ProviderPage,
} from '../payment-provider.port';
import { ProviderEvent } from '../provider-event';
import { nowSeconds, parseSandboxPriceId, priceObject, sandboxPriceIds } from './provider-events';
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
    private readonly urls: SandboxUrls,
    private readonly config: AppConfig,
  ) {
    super();
  }

  tierPriceIds(tier: string): string[] {
    return sandboxPriceIds(tier);
  }

  /** The sandbox's own prices (provider-events.ts): one monthly and one yearly for each paid tier. */
  retrievePrice(priceId: string): Promise<PriceInfo> {
    return this.call('prices.retrieve', async () => {
      const parsed = parseSandboxPriceId(priceId);
      if (!parsed || !isPaidTier(this.config.tiers, parsed.tier)) throw new PaymentProviderError('not_found', `No such price: '${priceId}'`);
      const p = priceObject(parsed.tier, parsed.interval);
      return {
        id: p.id,
        active: p.active,
        unitAmount: p.unit_amount,
        currency: p.currency,
        recurring: { interval: p.recurring.interval, intervalCount: p.recurring.interval_count },
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
      const s = await this.store.createCheckout({
        tier: input.tier,
        metadata: { organisation_id: input.organisationId, tier: input.tier },
        clientReferenceId: input.organisationId,
        customerId: input.customerId,
        successUrl: input.successUrl,
        cancelUrl: input.cancelUrl,
      });
      return { id: s.id, url: this.urls.page(`/sandbox/checkout/${s.id}`) };
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

  // --- Subscription changes (spec §11.4). PLACEHOLDERS until the sandbox helper lands its own versions, with
  // proration by the second (spec §11.6): each refuses, so a change in sandbox mode answers an error.
  previewItemChange(_subscriptionId: string, _change: ItemChange & { when: 'now' | 'period_end' }): Promise<InvoicePreview> {
    return this.call('invoices.create_preview', () => notYet('invoice previews'));
  }

  changeItemNow(_subscriptionId: string, _change: ItemChange): Promise<Record<string, any>> {
    return this.call('subscriptions.update', () => notYet('subscription changes'));
  }

  scheduleItemChange(_subscriptionId: string, _change: { scheduleId: string | null; next: PlanItem }): Promise<Record<string, any>> {
    return this.call('subscription_schedules.update', () => notYet('subscription schedules'));
  }

  releaseSchedule(_scheduleId: string): Promise<Record<string, any>> {
    return this.call('subscription_schedules.release', () => notYet('subscription schedules'));
  }

  setCancelAtPeriodEnd(_subscriptionId: string, _cancel: boolean): Promise<Record<string, any>> {
    return this.call('subscriptions.update', () => notYet('cancel_at_period_end'));
  }

  /** Times the call like the real adapter does; a database failure here is the provider being unavailable. */
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

/** PLACEHOLDER (see above): what the sandbox cannot do yet. */
function notYet(what: string): Promise<never> {
  return Promise.reject(new PaymentProviderError('rejected', `the sandbox does not support ${what} yet`));
}

/** A page from one row more than a page: the extra row only says that there are more. */
function page<T>(rows: T[]): ProviderPage<T> {
  return { data: rows.slice(0, PROVIDER_PAGE_SIZE), hasMore: rows.length > PROVIDER_PAGE_SIZE };
}
