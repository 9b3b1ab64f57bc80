import { FREE_TIER, METRICS, Overage, TierPlan } from '../config/tiers';

/**
 * A tier's definition as a plan version records it (spec §17), in the form `licensing.tier_plan` reads (the same
 * keys as the tier table's argument, licenseArguments): what the tier grants and the price ids that sell it.
 *
 * Only what the tier itself says is recorded: the features it grants and, beside the three metrics, the further
 * metrics it names. A feature or metric added to the table for another tier (false, or limit 0, everywhere else)
 * changes no other tier's definition, so it records no version of them; the license fills in what a version does
 * not name from the table (false, 0, block), as the table itself does.
 */
export interface PlanDefinition {
  per_seat: boolean;
  trial_days: number;
  /** Metric → limit (a per-seat tier's `users` is its `max`). */
  limits: Record<string, number>;
  /** Metric → what a report past the limit does, for the same metrics. */
  overage: Record<string, Overage>;
  /** Metric → the most of the unused included amount carried into the next period (credits metrics with one). */
  rollover: Record<string, number>;
  /** The features it grants, each true. */
  features: Record<string, true>;
  /** PAYPROVIDER_PRICE_<TIER> (the sandbox's own prices in the sandbox), in order: the first is sold. */
  prices: string[];
}

const BASE_METRICS: readonly string[] = METRICS;

export function planDefinition(plan: TierPlan, prices: string[]): PlanDefinition {
  const named = Object.entries(plan.metrics).filter(
    ([metric, rule]) => BASE_METRICS.includes(metric) || rule.limit !== 0 || rule.overage !== 'block' || rule.rollover !== null,
  );
  return {
    per_seat: plan.perSeat,
    trial_days: plan.trialDays,
    limits: Object.fromEntries(named.map(([metric, rule]) => [metric, rule.limit])),
    overage: Object.fromEntries(named.map(([metric, rule]) => [metric, rule.overage])),
    rollover: Object.fromEntries(named.flatMap(([metric, rule]) => (rule.rollover === null ? [] : [[metric, rule.rollover]]))),
    features: Object.fromEntries(Object.entries(plan.features).flatMap(([feature, on]) => (on ? [[feature, true as const]] : []))),
    prices,
  };
}

/** Every tier's definition, tier → definition, in table order; the free tier sells nothing. */
export function tableDefinitions(tiers: Record<string, TierPlan>, pricesOf: (tier: string) => string[]): Record<string, PlanDefinition> {
  return Object.fromEntries(Object.entries(tiers).map(([tier, plan]) => [tier, planDefinition(plan, tier === FREE_TIER ? [] : pricesOf(tier))]));
}
