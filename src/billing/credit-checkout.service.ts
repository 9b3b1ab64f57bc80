import { Injectable } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { IdentityService } from '../identity/identity.service';
import { MAX_GRANT_AMOUNT } from '../credits/credits.service';
import { CallerLimits } from '../provider/caller-limits';
import { PriceCatalog } from '../provider/price-catalog';
import { PackCheckoutInput, PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { providerFailure } from '../provider/provider-failure';
import { CreateCreditCheckoutDto, CreditCheckoutCreatedResponse } from './credit-checkout.dto';
import { packCheckoutMetadata } from './credit-purchases';
import { currencyRefusal, requireCurrency } from './currency';
import { CustomerRecords } from './customer-records.service';
import { requireReturnUrl } from './return-url';

/**
 * POST /api/billing/credits/checkout (spec §16.3): a checkout of mode payment for credit packs, on any tier, with
 * or without a subscription. It is not the organisation's open checkout (spec §11.3): buying credits never closes
 * a subscription's checkout, nor waits for one. The credits are granted when the provider says the session is
 * paid (the webhook's checkout handlers), never here.
 */
@Injectable()
export class CreditCheckoutService {
  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly customers: CustomerRecords,
    private readonly config: AppConfig,
    private readonly callerLimits: CallerLimits,
    private readonly catalog: PriceCatalog,
  ) {}

  async create(caller: AuthUser, dto: CreateCreditCheckoutDto): Promise<CreditCheckoutCreatedResponse> {
    await this.identity.requireMember(caller, dto.organisation_id);
    const { pack } = dto;
    if (!Object.hasOwn(this.config.creditPacks, pack)) {
      throw new AppException('invalid_pack', `There is no credit pack "${pack.slice(0, 64)}"; GET /api/billing/plans lists them.`);
    }
    const priceId = this.config.providerPackPrices[pack]?.[0];
    if (!priceId && this.provider.requiresPriceIds) {
      throw new AppException('pack_not_for_sale', `The credit pack ${pack} has no price configured and cannot be bought.`);
    }
    const app = this.config.appUrl;
    const successUrl = requireReturnUrl('success_url', dto.success_url ?? `${app.origin}/billing/success?session_id={CHECKOUT_SESSION_ID}&credits=1`, app);
    const cancelUrl = requireReturnUrl('cancel_url', dto.cancel_url ?? `${app.origin}/billing/cancel`, app);
    const quantity = dto.quantity ?? 1;
    // The grant is amount × quantity, and no grant is larger than MAX_GRANT_AMOUNT (spec §16.2).
    if (this.config.creditPacks[pack].amount * quantity > MAX_GRANT_AMOUNT) {
      throw new AppException('validation_failed', `quantity must be at most ${Math.floor(MAX_GRANT_AMOUNT / this.config.creditPacks[pack].amount)} for the pack ${pack}.`);
    }
    if (dto.currency) requireCurrency(this.catalog, priceId ?? this.provider.packPriceIds(pack)[0], dto.currency);
    const organisationId = dto.organisation_id;
    try {
      this.callerLimits.take(caller.id);
      const input: PackCheckoutInput = {
        organisationId,
        pack,
        priceId,
        quantity,
        currency: dto.currency,
        customerId: await this.customers.ensure(organisationId),
        metadata: packCheckoutMetadata({ organisationId, pack, quantity }),
        successUrl,
        cancelUrl,
        allowPromotionCodes: this.config.checkout.allowPromotionCodes,
        automaticTax: this.config.checkout.automaticTax,
      };
      const session = await this.createSession(input);
      return { session_id: session.id, url: session.url };
    } catch (err) {
      throw currencyRefusal(err, dto.currency) ?? providerFailure(err);
    }
  }

  /** A stored customer the provider no longer knows would fail every purchase: it is replaced by a new one. */
  private async createSession(input: PackCheckoutInput): Promise<{ id: string; url: string }> {
    try {
      return await this.provider.createPackCheckoutSession(input);
    } catch (err) {
      if (!(err instanceof PaymentProviderError && err.kind === 'not_found' && err.param === 'customer')) throw err;
      const customerId = await this.customers.replace(input.organisationId, input.customerId);
      return this.provider.createPackCheckoutSession({ ...input, customerId });
    }
  }
}
