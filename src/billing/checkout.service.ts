import { Injectable } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { isPaidTier, paidTiers } from '../config/tiers';
import { IdentityService } from '../identity/identity.service';
import { CheckoutCreatedResponse, CreateCheckoutDto } from './checkout.dto';
import { PaymentProvider } from './payment-provider.port';
import { providerFailure } from './provider-failure';
import { requireReturnUrl } from './return-url';

/** POST /api/billing/checkout: opens a subscription checkout for a paid tier. */
@Injectable()
export class CheckoutService {
  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly config: AppConfig,
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
    const priceId = this.config.providerPrices[tier];
    if (!priceId && this.provider.requiresPriceIds) {
      // A known tier nobody configured a price for: say so rather than fail inside the provider.
      throw new AppException('tier_not_for_sale', `The tier ${tier} has no price configured and cannot be bought.`);
    }
    const customerId = await this.identity.customerOf(dto.organisation_id);
    try {
      const session = await this.provider.createCheckoutSession({
        organisationId: dto.organisation_id,
        tier,
        priceId,
        customerId: customerId ?? undefined,
        successUrl,
        cancelUrl,
      });
      return { session_id: session.id, url: session.url };
    } catch (err) {
      throw providerFailure(err);
    }
  }
}
