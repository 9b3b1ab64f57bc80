import { idOf, isObject } from '../billing/provider-event';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, isPaidTier } from '../config/tiers';

export type TierResolution = { tier: string } | { error: string };

/**
 * The tier a subscription grants (spec §5), first source present wins: the tier whose
 * PAYPROVIDER_PRICE_<TIER> lists an item's price id; else the item's `price.metadata.tier`; else its
 * `price.lookup_key` when it equals a tier name or starts with `<tier>_`; else the subscription's
 * `metadata.tier`. The configured price comes first so that a plan switch in the provider's portal (a new
 * price, old metadata) changes the tier. A value that is not a paid tier of the table is an error rather
 * than a reason to look further, so a mistyped price never silently grants another tier.
 */
export function resolveTier(subscription: Record<string, any>, config: Pick<AppConfig, 'tiers' | 'providerPrices'>): TierResolution {
  const items: unknown[] = Array.isArray(subscription.items?.data) ? subscription.items.data : [];
  const prices = items.map((item) => (isObject(item) && isObject(item.price) ? item.price : undefined)).filter(isObject);
  const configured = prices.map((price) => tierOfPrice(idOf(price.id), config.providerPrices)).find(Boolean);
  if (configured) return { tier: configured };
  const candidate =
    prices.map((price) => fromMetadata(price.metadata, 'price.metadata.tier') ?? fromLookupKey(price.lookup_key, config)).find(Boolean) ??
    fromMetadata(subscription.metadata, 'subscription metadata.tier');
  if (!candidate) {
    return { error: 'no tier: no configured price, price.metadata.tier, tier lookup_key or metadata.tier' };
  }
  const { value, source } = candidate;
  if (!isPaidTier(config.tiers, value)) {
    return value === FREE_TIER
      ? { error: `${source} is "${FREE_TIER}": a paid subscription cannot grant the free tier` }
      : { error: `${source} "${value.slice(0, 64)}" is not a configured tier` };
  }
  return { tier: value };
}

/** The tier whose PAYPROVIDER_PRICE_<TIER> lists this price id. */
export function tierOfPrice(priceId: string | undefined, prices: Record<string, string[]>): string | undefined {
  if (!priceId) return undefined;
  return Object.keys(prices).find((tier) => prices[tier].includes(priceId));
}

interface Candidate {
  value: string;
  source: string;
}

function fromMetadata(metadata: unknown, source: string): Candidate | undefined {
  const value = isObject(metadata) ? metadata.tier : undefined;
  return typeof value === 'string' && value.trim() ? { value: value.trim(), source } : undefined;
}

function fromLookupKey(key: unknown, config: Pick<AppConfig, 'tiers'>): Candidate | undefined {
  if (typeof key !== 'string') return undefined;
  const tier = Object.keys(config.tiers).find((name) => key === name || key.startsWith(`${name}_`));
  return tier ? { value: tier, source: 'price.lookup_key' } : undefined;
}
