import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { IdentityService } from '../identity/identity.service';
import { CallerLimits } from '../provider/caller-limits';
import { CheckoutPlan, OpenCheckoutsRepository, RecordedSession } from './open-checkouts.repository';
import { CheckoutCreatedResponse, CreateCheckoutDto } from './checkout.dto';
import { CreateCheckoutInput, PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { PriceCatalog } from '../provider/price-catalog';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { checkRequest } from '../subscriptions/subscription-plan';
import { providerFailure } from '../provider/provider-failure';
import { currencyRefusal, requireCurrency } from './currency';
import { requireReturnUrl } from './return-url';

// A second tab's checkout waits up to ~5 s for the first to open its session, then answers 409 checkout_in_progress.
const CLAIM_ATTEMPTS = 25;
const CLAIM_RETRY_MS = 200;

/**
 * POST /api/billing/checkout: opens a subscription checkout for a paid tier. One billing subscription per
 * organisation: with one live, a second checkout would bill twice (409 subscription_exists: change the
 * plan in the portal instead). And one payable checkout session per organisation (open_checkouts): a second
 * checkout for the same plan gets the open session back (200), one for another plan expires it at the provider
 * before opening its own (201).
 */
@Injectable()
export class CheckoutService {
  private readonly logger = new Logger('Checkout');

  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly subscriptions: SubscriptionsService,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly callerLimits: CallerLimits,
    private readonly openCheckouts: OpenCheckoutsRepository,
    private readonly catalog: PriceCatalog,
  ) {}

  /** `created`: false when the organisation's open session for the same plan is answered again. */
  async create(caller: AuthUser, dto: CreateCheckoutDto): Promise<{ session: CheckoutCreatedResponse; created: boolean }> {
    await this.identity.requireMember(caller, dto.organisation_id);
    const { tier } = dto;
    checkRequest(this.config.tiers, { tier, seats: dto.seats });
    const app = this.config.appUrl;
    const successUrl = requireReturnUrl(
      'success_url',
      dto.success_url ?? `${app.origin}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
      app,
    );
    const cancelUrl = requireReturnUrl('cancel_url', dto.cancel_url ?? `${app.origin}/billing/cancel`, app);
    const priceId = this.priceOf(tier, dto.interval);
    if (dto.currency) requireCurrency(this.catalog, priceId ?? this.provider.tierPriceIds(tier)[0], dto.currency);
    const live = await this.subscriptions.billingSubscriptionOf(this.db.manager, dto.organisation_id);
    if (live) {
      throw new AppException(
        'subscription_exists',
        `The organisation already has a subscription (${live.status}); change the plan in the billing portal instead.`,
      );
    }
    const plan = await this.planOf(dto, priceId);
    const { checkout } = this.config;
    const input = {
      organisationId: dto.organisation_id,
      tier,
      priceId,
      successUrl,
      cancelUrl,
      quantity: plan.seats ?? 1,
      trialDays: plan.trialDays,
      trialWithoutPaymentMethod: plan.trialDays > 0 && !checkout.trialRequiresPaymentMethod,
      allowPromotionCodes: checkout.allowPromotionCodes,
      automaticTax: checkout.automaticTax,
      currency: dto.currency,
    };
    const { claim, recorded } = await this.claim(dto.organisation_id);
    try {
      this.callerLimits.take(caller.id);
      if (recorded && (await this.stillPayable(recorded, plan))) {
        await this.openCheckouts.release(dto.organisation_id, claim);
        return { session: { session_id: recorded.sessionId, url: recorded.url, trial_days: recorded.trialDays }, created: false };
      }
      const customerId = (await this.identity.customerOf(dto.organisation_id)) ?? undefined;
      const session = await this.createSession({ ...input, customerId });
      await this.record(dto.organisation_id, claim, { sessionId: session.id, url: session.url, ...plan });
      return { session: { session_id: session.id, url: session.url, trial_days: plan.trialDays }, created: true };
    } catch (err) {
      await this.openCheckouts.release(dto.organisation_id, claim).catch(() => undefined);
      throw currencyRefusal(err, dto.currency) ?? providerFailure(err);
    }
  }

  /**
   * The price sold (spec §11.3): the tier's price with `interval` (none: 400 price_not_found), else its first
   * listed one. The sandbox, which invents its prices, needs none without an interval.
   */
  private priceOf(tier: string, interval: string | undefined): string | undefined {
    if (interval) {
      const price = this.catalog.priceFor(tier, interval);
      if (!price) throw new AppException('price_not_found', `The tier ${tier} has no ${interval}ly price.`);
      return price.id;
    }
    const priceId = this.config.providerPrices[tier]?.[0];
    if (!priceId && this.provider.requiresPriceIds) {
      // A known tier nobody configured a price for: say so rather than fail inside the provider.
      throw new AppException('tier_not_for_sale', `The tier ${tier} has no price configured and cannot be bought.`);
    }
    return priceId;
  }

  /**
   * What the checkout sells: the seats of a per-seat tier (default the member count, at least 1; fewer than the
   * members → 409) and the trial, given when the tier has one and the organisation never had a subscription.
   */
  private async planOf(dto: CreateCheckoutDto, priceId: string | undefined): Promise<CheckoutPlan> {
    const tier = this.config.tiers[dto.tier];
    let seats: number | null = null;
    if (tier.perSeat) {
      const members = await this.identity.memberCount(dto.organisation_id);
      seats = dto.seats ?? Math.max(1, members);
      if (seats < members) {
        throw new AppException('seats_below_members', `The organisation has ${members} members: it needs at least ${members} seats.`);
      }
    }
    const trialDays = tier.trialDays > 0 && !(await this.subscriptions.everHad(this.db.manager, dto.organisation_id)) ? tier.trialDays : 0;
    return { tier: dto.tier, priceId: priceId ?? null, seats, trialDays, currency: dto.currency ?? null };
  }

  /**
   * This request's claim on the organisation's checkout. Another request opening one at this very moment (a
   * second tab) is waited for, briefly, so that both answer the same session.
   */
  private async claim(organisationId: string): Promise<{ claim: string; recorded: RecordedSession | null }> {
    const claim = randomUUID();
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const outcome = await this.openCheckouts.claim(organisationId, claim);
      if (outcome !== 'busy') return { claim, recorded: outcome.recorded };
      await sleep(CLAIM_RETRY_MS);
    }
    throw new AppException('checkout_in_progress', 'Another checkout of this organisation is being opened; try again shortly.', {
      retryAfterS: 2,
    });
  }

  /**
   * True when the recorded session sells this plan and is still open at the provider. Otherwise it must not stay
   * payable beside a new one: an open session for another plan is expired. One already paid (its subscription not
   * recorded here yet: the webhook is on its way) stops this checkout, as a live subscription would.
   */
  private async stillPayable(recorded: RecordedSession, plan: CheckoutPlan): Promise<boolean> {
    const samePlan =
      recorded.tier === plan.tier &&
      recorded.priceId === plan.priceId &&
      recorded.seats === plan.seats &&
      recorded.trialDays === plan.trialDays &&
      recorded.currency === plan.currency;
    if (!samePlan) {
      const expired = await this.provider.expireCheckoutSession(recorded.sessionId).then(
        () => true,
        (err: unknown) => {
          if (err instanceof PaymentProviderError && (err.kind === 'rejected' || err.kind === 'not_found')) return false;
          throw err;
        },
      );
      if (expired) return false;
    }
    const session = await this.provider.retrieveCheckoutSession(recorded.sessionId).catch((err: unknown) => {
      if (err instanceof PaymentProviderError && err.kind === 'not_found') return undefined;
      throw err;
    });
    if (session?.status === 'open') {
      // Only reached for another plan when the expiry raced a change at the provider: try again, never pay twice.
      if (samePlan) return true;
      throw new AppException('checkout_in_progress', 'The previous checkout could not be closed yet; try again shortly.', { retryAfterS: 2 });
    }
    if (session?.status === 'complete' && session.subscriptionId) {
      const known = await this.subscriptions.find(this.db.manager, session.subscriptionId);
      if (!known) {
        throw new AppException('subscription_exists', 'A checkout of this organisation was just paid; its subscription is being set up.');
      }
    }
    return false;
  }

  /** A claim lost meanwhile (its lease ran out) means another request may record its own: close ours. */
  private async record(organisationId: string, claim: string, session: RecordedSession): Promise<void> {
    if (await this.openCheckouts.record(organisationId, claim, session)) return;
    await this.provider.expireCheckoutSession(session.sessionId).catch(() => undefined);
    throw new AppException('checkout_in_progress', 'Another checkout of this organisation was opened meanwhile; try again.', {
      retryAfterS: 2,
    });
  }

  /**
   * A stored customer the provider no longer knows (deleted there, or a test-mode id after switching to a
   * live key) would fail every checkout: forget it and let the provider create a new customer, which the
   * subscription's events then link.
   */
  private async createSession(input: CreateCheckoutInput) {
    try {
      return await this.provider.createCheckoutSession(input);
    } catch (err) {
      const staleCustomer = input.customerId && err instanceof PaymentProviderError && err.kind === 'not_found' && err.param === 'customer';
      if (!staleCustomer) throw err;
      this.logger.warn({
        msg: 'the payment provider does not know the stored customer; checking out with a new customer',
        organisationId: input.organisationId,
        customerId: input.customerId,
      });
      await this.identity.forgetCustomer(input.organisationId, input.customerId!);
      return this.provider.createCheckoutSession({ ...input, customerId: undefined });
    }
  }
}
