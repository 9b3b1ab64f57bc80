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

/** Every tier with its features, limits, trial days and prices, and the credit packs (`GET /api/billing/plans`). */
export function usePlans(): Read<Schemas['PlanList']> {
  const { client } = useBilling();
  return useRead(PLANS_KEY, () => client.plans());
}

/** The live subscription with its seats and pending change; `data` is null when there is none. */
export function useSubscription(): Read<Schemas['SubscriptionView'] | null> {
  const { client, organisationId } = useBilling();
  return useRead(orgKey(organisationId, 'subscription'), async () => (await client.subscription(organisationId)).subscription);
}

/** What the organisation has of a credits metric, and the packs that sell more of it. */
export interface Credits {
  metric: Metric;
  /** The limit in force: the amount included per period. */
  included: number;
  used: number;
  /** What is left of the included amount this period. */
  includedLeft: number;
  /** What a report past the limit does: only `credits` draws on purchased credits. */
  overage: Schemas['LimitEntitlement']['overage'];
  /** The packs on sale for this metric (with their prices; the first price is the one sold). */
  packs: Schemas['CreditPackPlan'][];
  /**
   * The balance of purchased and granted credits, and each grant with its expiry: null while the service has
   * no route that reads them for a member (the grants are kept, and spent by usage reports, all the same).
   */
  balance: number | null;
  grants: { amount: number; expires_at: number | null }[] | null;
}

/** A credits metric: the included amount left, the packs for sale (`CreditBalance` shows it). */
export function useCredits(metric: Metric): Read<Credits> {
  const entitlements = useEntitlements();
  const plans = usePlans();
  const limit = entitlements.data?.limits[metric] as Schemas['LimitEntitlement'] | undefined;
  const packs = plans.data?.credit_packs;
  const data = useMemo<Credits | undefined>(() => {
    if (!limit || !packs) return undefined;
    return {
      metric,
      included: limit.limit,
      used: limit.used,
      includedLeft: Math.max(0, limit.limit - limit.used),
      overage: limit.overage,
      packs: packs.filter((pack) => pack.metric === metric),
      balance: null,
      grants: null,
    };
  }, [metric, limit, packs]);
  const refreshEntitlements = entitlements.refresh;
  const refreshPlans = plans.refresh;
  const refresh = useCallback(async () => {
    await Promise.all([refreshEntitlements(), refreshPlans()]);
  }, [refreshEntitlements, refreshPlans]);
  return {
    data,
    loading: entitlements.loading || plans.loading,
    error: entitlements.error ?? plans.error,
    refresh,
  };
}
