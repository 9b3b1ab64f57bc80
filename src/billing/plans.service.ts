import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, limitsOf } from '../config/tiers';
import { PlanList, PlanLimits } from './plans.dto';
import { PriceCatalog } from '../provider/price-catalog';

/** The public plan list (spec §11.2, §16.3): the tier table and its credit packs with the prices the provider confirmed. */
@Injectable()
export class PlansService {
  constructor(
    private readonly config: AppConfig,
    private readonly catalog: PriceCatalog,
  ) {}

  list(): PlanList {
    return {
      data: Object.entries(this.config.tiers).map(([tier, plan]) => ({
        tier,
        per_seat: plan.perSeat,
        trial_days: plan.trialDays,
        features: plan.features,
        limits: limitsOf(plan) as PlanLimits,
        prices: tier === FREE_TIER ? [] : this.catalog.pricesOf(tier),
      })),
      credit_packs: Object.entries(this.config.creditPacks).map(([pack, p]) => ({
        pack,
        metric: p.metric,
        amount: p.amount,
        expires_after_days: p.expiresAfterDays,
        prices: this.catalog.packPricesOf(pack),
      })),
    };
  }
}
