import { isObject } from '../provider/provider-event';
import { SubscriptionObject } from '../provider/provider-objects';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, isPaidTier } from '../config/tiers';

/** How a subscription's tier was resolved (spec §5): which source, first present, named it. Stored with the tier. */
export const TIER_SOURCES = ['configured_price', 'price_metadata', 'lookup_key', 'subscription_metadata'] as const;
export type TierSource = (typeof TIER_SOURCES)[number];

export type TierResolution = { tier: string; source: TierSource } | { error: string };

// How each source is named in an error (the provider's field).
const FIELD: Record<Exclude<TierSource, 'configured_price'>, string> = {
  price_metadata: 'price.metadata.tier',
  lookup_key: 'price.lookup_key',
  subscription_metadata: 'subscription metadata.tier',
};

/**
 * The tier a subscription grants (spec §5), first source present wins: the tier whose
 * PAYPROVIDER_PRICE_<TIER> lists an item's price id; else the item's `price.metadata.tier`; else its
 * `price.lookup_key` when it equals a tier name or starts with `<tier>_`; else the subscription's
 * `metadata.tier`. The configured price comes first so that a plan switch in the provider's portal (a new
 * price, old metadata) changes the tier. A value that is not a paid tier of the table is an error rather
 * than a reason to look further, so a mistyped price never silently grants another tier.
 */
export function resolveTier(subscription: SubscriptionObject, config: Pick<AppConfig, 'tiers' | 'providerPrices'>): TierResolution {
  const prices = (subscription.items?.data ?? []).map((item) => item.price).filter(isObject);
  const configured = prices.map((price) => tierOfPrice(price.id, config.providerPrices)).find(Boolean);
  if (configured) return { tier: configured, source: 'configured_price' };
  const candidate =
    prices.map((price) => fromMetadata(price.metadata, 'price_metadata') ?? fromLookupKey(price.lookup_key, config)).find(Boolean) ??
    fromMetadata(subscription.metadata, 'subscription_metadata');
  if (!candidate) {
    return { error: 'no tier: no configured price, price.metadata.tier, tier lookup_key or metadata.tier' };
  }
  const { value, source } = candidate;
  if (!isPaidTier(config.tiers, value)) {
    return value === FREE_TIER
      ? { error: `${FIELD[source]} is "${FREE_TIER}": a paid subscription cannot grant the free tier` }
      : { error: `${FIELD[source]} "${value.slice(0, 64)}" is not a configured tier` };
  }
  return { tier: value, source };
}

/** The tier whose PAYPROVIDER_PRICE_<TIER> lists this price id. */
export function tierOfPrice(priceId: string | undefined, prices: Record<string, string[]>): string | undefined {
  if (!priceId) return undefined;
  return Object.keys(prices).find((tier) => prices[tier].includes(priceId));
}

interface Candidate {
  value: string;
  source: Exclude<TierSource, 'configured_price'>;
}

function fromMetadata(metadata: unknown, source: Candidate['source']): Candidate | undefined {
  const value = isObject(metadata) ? metadata.tier : undefined;
  return typeof value === 'string' && value.trim() ? { value: value.trim(), source } : undefined;
}

function fromLookupKey(key: unknown, config: Pick<AppConfig, 'tiers'>): Candidate | undefined {
  if (typeof key !== 'string') return undefined;
  const tier = Object.keys(config.tiers).find((name) => key === name || key.startsWith(`${name}_`));
  return tier ? { value: tier, source: 'lookup_key' } : undefined;
}
