import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { isPaidTier, paidTiers } from '../config/tiers';
import { IdentityService } from '../identity/identity.service';
import { CheckoutCreatedResponse, CreateCheckoutDto } from './checkout.dto';
import { CreateCheckoutInput, PaymentProvider, PaymentProviderError } from './payment-provider.port';
import { ProviderSubscriptions } from './provider-subscriptions.service';
import { providerFailure } from './provider-failure';
import { requireReturnUrl } from './return-url';

/**
 * POST /api/billing/checkout: opens a subscription checkout for a paid tier. One billing subscription per
 * organisation: with one live, a second checkout would bill twice (409 subscription_exists: change the
 * plan in the portal instead).
 */
@Injectable()
export class CheckoutService {
  private readonly logger = new Logger('Checkout');

  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly subscriptions: ProviderSubscriptions,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async create(caller: AuthUser, dto: CreateCheckoutDto): Promise<CheckoutCreatedResponse> {
    await this.identity.requireMember(caller, dto.organisation_id);
    const { tier } = dto;
    if (!isPaidTier(this.config.tiers, tier)) {
      throw new AppException('invalid_tier', `tier must be one of ${paidTiers(this.config.tiers).join(', ')}.`);
    }
    const app = this.config.appUrl;
    const successUrl = requireReturnUrl(
      'success_url',
      dto.success_url ?? `${app.origin}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
      app,
    );
    const cancelUrl = requireReturnUrl('cancel_url', dto.cancel_url ?? `${app.origin}/billing/cancel`, app);
    const priceId = this.config.providerPrices[tier]?.[0];
    if (!priceId && this.provider.requiresPriceIds) {
      // A known tier nobody configured a price for: say so rather than fail inside the provider.
      throw new AppException('tier_not_for_sale', `The tier ${tier} has no price configured and cannot be bought.`);
    }
    const live = await this.subscriptions.billingSubscriptionOf(dto.organisation_id, this.db.manager);
    if (live) {
      throw new AppException(
        'subscription_exists',
        `The organisation already has a subscription (${live.status}); change the plan in the billing portal instead.`,
      );
    }
    const input = { organisationId: dto.organisation_id, tier, priceId, successUrl, cancelUrl };
    const customerId = (await this.identity.customerOf(dto.organisation_id)) ?? undefined;
    try {
      const session = await this.createSession({ ...input, customerId });
      return { session_id: session.id, url: session.url };
    } catch (err) {
      throw providerFailure(err);
    }
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
