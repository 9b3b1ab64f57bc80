import { Injectable } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, limitsOf } from '../config/tiers';
import { PlanList, PlanLimits } from './plans.dto';
import { PackPrice, PlanPrice, PriceCatalog } from '../provider/price-catalog';

/** The public plan list (spec §11.2, §16.3): the tier table and its credit packs with the prices the provider confirmed. */
@Injectable()
export class PlansService {
  constructor(
    private readonly config: AppConfig,
    private readonly catalog: PriceCatalog,
  ) {}

  /** `currency` (lower case): every price in it, from the provider's currency options (spec §17). */
  list(currency?: string): PlanList {
    const shown = <P extends PlanPrice | PackPrice>(prices: P[]): P[] => (currency === undefined ? prices : prices.map((p) => this.inCurrency(p, currency)));
    return {
      data: Object.entries(this.config.tiers).map(([tier, plan]) => ({
        tier,
        per_seat: plan.perSeat,
        trial_days: plan.trialDays,
        features: plan.features,
        limits: limitsOf(plan) as PlanLimits,
        prices: tier === FREE_TIER ? [] : shown(this.catalog.pricesOf(tier)),
      })),
      credit_packs: Object.entries(this.config.creditPacks).map(([pack, p]) => ({
        pack,
        metric: p.metric,
        amount: p.amount,
        expires_after_days: p.expiresAfterDays,
        prices: shown(this.catalog.packPricesOf(pack)),
      })),
    };
  }

  private inCurrency<P extends PlanPrice | PackPrice>(price: P, currency: string): P {
    const converted = this.catalog.inCurrency(price, currency);
    if (!converted) {
      throw new AppException('currency_unavailable', `The price ${price.id} is not sold in ${currency.toUpperCase()}: the payment provider has no currency option of it.`);
    }
    return converted;
  }
}
