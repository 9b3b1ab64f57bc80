import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, limitsOf } from '../config/tiers';
import { Plan, PlanLimits } from './plans.dto';
import { PriceCatalog } from '../provider/price-catalog';

/** The public plan list (spec §11.2): the tier table with the prices the provider confirmed. */
@Injectable()
export class PlansService {
  constructor(
    private readonly config: AppConfig,
    private readonly catalog: PriceCatalog,
  ) {}

  list(): { data: Plan[] } {
    return {
      data: Object.entries(this.config.tiers).map(([tier, plan]) => ({
        tier,
        per_seat: plan.perSeat,
        trial_days: plan.trialDays,
        features: plan.features,
        limits: limitsOf(plan) as PlanLimits,
        prices: tier === FREE_TIER ? [] : this.catalog.pricesOf(tier),
      })),
    };
  }
}
