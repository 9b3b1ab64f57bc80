import type { Feature, Metric, Schemas, ServiceError } from '@billing-licensing/client';
import { useCallback, useMemo, useRef, useSyncExternalStore } from 'react';
import { orgKey, PLANS_KEY, useBilling } from './provider.js';
import type { ReadState } from './store.js';

/** A read's state and a way to read it again now. */
export interface Read<T> extends ReadState<T> {
  refresh: () => Promise<void>;
}

/** One cached read: shared by every hook of the same key, refetched by `refresh()` and on window focus. */
function useRead<T>(key: string, read: () => Promise<T>): Read<T> {
  const { store } = useBilling();
  const latest = useRef(read);
  latest.current = read;
  const subscribe = useCallback((listener: () => void) => store.subscribe(key, () => latest.current(), listener), [store, key]);
  const state = useSyncExternalStore(subscribe, () => store.snapshot<T>(key), () => store.snapshot<T>(key));
  const refresh = useCallback(() => store.load(key), [store, key]);
  return useMemo(() => ({ ...state, refresh }), [state, refresh]);
}

/** Every feature and limit in force for the organisation, with usage (`GET /api/licensing/entitlements`). */
export function useEntitlements(): Read<Schemas['EntitlementsResponse']> {
  const { client, organisationId } = useBilling();
  return useRead(orgKey(organisationId, 'entitlements'), () => client.entitlements(organisationId));
}

export interface FeatureState {
  /** Whether the feature is in force (false while loading or after a failure). */
  allowed: boolean;
  loading: boolean;
  error: ServiceError | null;
  refresh: () => Promise<void>;
}

/** Whether a feature is in force for the organisation (from the entitlements read, so one request for all). */
export function useFeature(name: Feature): FeatureState {
  const { data, loading, error, refresh } = useEntitlements();
  return { allowed: data?.features[name] === true, loading, error, refresh };
}

/** A metric's usage: `used`, `limit`, `at_capacity`, `overage`, and where the limit comes from. */
export function useUsage(metric: Metric): Read<Schemas['LimitEntitlement']> {
  const entitlements = useEntitlements();
  const usage = entitlements.data?.limits[metric] as Schemas['LimitEntitlement'] | undefined;
  return useMemo(() => ({ ...entitlements, data: usage }), [entitlements, usage]);
}

/**
 * Every tier with its features, limits, trial days and prices, and the credit packs (`GET /api/billing/plans`);
 * with `currency` (e.g. `'eur'`), every price in that currency (a price without it: a `currency_unavailable` error).
 */
export function usePlans(options: { currency?: string } = {}): Read<Schemas['PlanList']> {
  const { client } = useBilling();
  const currency = options.currency?.toLowerCase();
  return useRead(currency ? `${PLANS_KEY}:${currency}` : PLANS_KEY, () => client.plans(currency ? { currency } : {}));
}

/** The live subscription with its seats and pending change; `data` is null when there is none. */
export function useSubscription(): Read<Schemas['SubscriptionView'] | null> {
  const { client, organisationId } = useBilling();
  return useRead(orgKey(organisationId, 'subscription'), async () => (await client.subscription(organisationId)).subscription);
}

/** What the organisation has of a credits metric, and the packs that sell more of it. */
export interface Credits {
  metric: Metric;
  /** Whether the tier in force draws on credits for this metric (`overage: "credits"`); else grants are kept but not counted. */
  counted: boolean;
  /** The included amount of the period (the limit in force), what of it is used, and what is left. */
  included: number;
  used: number;
  includedLeft: number;
  /** What is left of the grants that count (purchased packs, operators' grants, rollover); 0 when not `counted`. */
  balance: number;
  /** What live reservations hold. */
  reserved: number;
  /** What the next reports may take: includedLeft + balance − reserved. */
  available: number;
  /** The grants that count, with what is left of each and its expiry, in the order they are drawn on. */
  grants: Schemas['CreditGrantRecord'][];
  /** The packs on sale for this metric (with their prices; the first price is the one sold). */
  packs: Schemas['CreditPackPlan'][];
}

/**
 * A credits metric (`GET /api/licensing/credits`, with the packs of `GET /api/billing/plans`): the included
 * amount left, the balance, what is reserved and available, the grants; `CreditBalance` shows it. A metric
 * that the tier in force does not draw credits for is `counted: false`, with its usage from the entitlements.
 * With `currency`, the packs' prices are in it (the plan list in that currency, as `usePlans` reads it).
 */
export function useCredits(metric: Metric, options: { currency?: string } = {}): Read<Credits> {
  const { client, organisationId } = useBilling();
  const credits = useRead(orgKey(organisationId, 'credits'), () => client.credits(organisationId));
  const entitlements = useEntitlements();
  const plans = usePlans(options);
  const entry = credits.data?.data.find((c) => c.metric === metric);
  const limit = entitlements.data?.limits[metric] as Schemas['LimitEntitlement'] | undefined;
  const packs = plans.data?.credit_packs;
  const data = useMemo<Credits | undefined>(() => {
    if (!credits.data || !packs || (!entry && !limit)) return undefined;
    const included = entry ? entry.included : { limit: limit!.limit, used: limit!.used, remaining: Math.max(0, limit!.limit - limit!.used) };
    return {
      metric,
      counted: entry !== undefined,
      included: included.limit,
      used: included.used,
      includedLeft: included.remaining,
      balance: entry?.balance ?? 0,
      reserved: entry?.reserved ?? 0,
      available: entry?.available ?? included.remaining,
      grants: entry?.grants ?? [],
      packs: packs.filter((pack) => pack.metric === metric),
    };
  }, [metric, credits.data, entry, limit, packs]);
  const [refreshCredits, refreshEntitlements, refreshPlans] = [credits.refresh, entitlements.refresh, plans.refresh];
  const refresh = useCallback(async () => {
    await Promise.all([refreshCredits(), refreshEntitlements(), refreshPlans()]);
  }, [refreshCredits, refreshEntitlements, refreshPlans]);
  return {
    data,
    loading: credits.loading || entitlements.loading || plans.loading,
    error: credits.error ?? entitlements.error ?? plans.error,
    refresh,
  };
}
