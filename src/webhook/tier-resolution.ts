import { FREE_TIER, isPaidTier, TierTable } from '../config/tiers';
import { isObject } from '../billing/provider-event';

export type TierResolution = { tier: string } | { error: string };

/**
 * The tier a subscription grants (SPEC 5): its item's `price.metadata.tier`; else `price.lookup_key` when
 * it equals a tier name or starts with `<tier>_`; else the subscription's `metadata.tier`. The first
 * source that is present decides: a value there that is not a configured paid tier is an error rather
 * than a reason to look further, so a mistyped price never silently grants another tier. `free` is
 * refused too: a paid subscription that grants nothing is a configuration mistake worth surfacing.
 */
export function resolveTier(subscription: Record<string, any>, tiers: TierTable): TierResolution {
  const candidate = fromItems(subscription, tiers) ?? fromMetadata(subscription.metadata, 'subscription metadata.tier');
  if (!candidate) {
    return { error: 'no tier: neither price.metadata.tier, a tier lookup_key nor metadata.tier is set' };
  }
  const { value, source } = candidate;
  if (!isPaidTier(tiers, value)) {
    return value === FREE_TIER
      ? { error: `${source} is "${FREE_TIER}": a paid subscription cannot grant the free tier` }
      : { error: `${source} "${value}" is not a configured tier` };
  }
  return { tier: value };
}

interface Candidate {
  value: string;
  source: string;
}

function fromItems(subscription: Record<string, any>, tiers: TierTable): Candidate | undefined {
  const items: unknown[] = Array.isArray(subscription.items?.data) ? subscription.items.data : [];
  for (const item of items) {
    const price = isObject(item) && isObject(item.price) ? item.price : undefined;
    if (!price) continue;
    const fromPrice = fromMetadata(price.metadata, 'price.metadata.tier');
    if (fromPrice) return fromPrice;
    const fromKey = fromLookupKey(price.lookup_key, tiers);
    if (fromKey) return fromKey;
  }
  return undefined;
}

function fromMetadata(metadata: unknown, source: string): Candidate | undefined {
  const value = isObject(metadata) ? metadata.tier : undefined;
  return typeof value === 'string' && value.trim() ? { value: value.trim(), source } : undefined;
}

function fromLookupKey(key: unknown, tiers: TierTable): Candidate | undefined {
  if (typeof key !== 'string') return undefined;
  const tier = Object.keys(tiers).find((name) => key === name || key.startsWith(`${name}_`));
  return tier ? { value: tier, source: 'price.lookup_key' } : undefined;
}
