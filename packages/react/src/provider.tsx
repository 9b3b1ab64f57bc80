import { createClient, type Client, type Schemas } from '@billing-licensing/client';
import { createContext, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { createFormatter, type Formatter } from './format.js';
import { defaultLabels, type Labels } from './labels.js';
import { ReadStore } from './store.js';

export interface BillingProviderProps {
  /** The service's origin, e.g. `https://billing.example.com`. */
  baseUrl: string;
  /**
   * The signed-in user's token for each request: a session the web app's back end minted
   * (`POST /api/admin/sessions`) or the web app's own JWT when the service trusts it (`AUTH_JWT_JWKS_URL`).
   * Called before every request, so a renewed token is used as soon as the app has it; null: none yet.
   */
  getToken: () => string | null | undefined | Promise<string | null | undefined>;
  /** The organisation the components read and act on. Reads are cached per organisation. */
  organisationId: string;
  /** Called when the service answers 401 (the token expired or was revoked): sign the user in again. */
  onUnauthorized?: (() => void) | undefined;
  /** The locale numbers, amounts and dates are written in (default: the browser's). */
  locale?: string | readonly string[] | undefined;
  /** Strings replacing the defaults, for every component under this provider. */
  labels?: Partial<Labels> | undefined;
  /** Read again when the window regains focus (default true). */
  refetchOnFocus?: boolean | undefined;
  /** Answers to seed the cache with, e.g. fetched on the server for the first render. */
  initialData?: InitialData | undefined;
  /** Another fetch (tests, a proxy of your own). */
  fetch?: typeof globalThis.fetch | undefined;
  children?: ReactNode;
}

export interface InitialData {
  plans?: Schemas['PlanList'];
  subscription?: Schemas['SubscriptionResponse'];
  entitlements?: Schemas['EntitlementsResponse'];
  credits?: Schemas['CreditsResponse'];
}

export interface BillingContextValue {
  client: Client;
  organisationId: string;
  labels: Labels;
  format: Formatter;
  store: ReadStore;
  /**
   * Reads everything of the organisation again (and the plan list): call it when a notification says something
   * changed (`license.updated`, `credits.granted`). The components call it after each change they make.
   */
  refresh: () => Promise<void>;
}

const BillingContext = createContext<BillingContextValue | null>(null);

/** The key of a read of the organisation in the cache. */
export const orgKey = (organisationId: string, read: string) => `org:${organisationId}:${read}`;
export const PLANS_KEY = 'plans';

/**
 * Gives the hooks and components below it the service, the signed-in user's token and the organisation. The
 * app keeps its own sign-in: the token comes from `getToken()` on every request.
 */
export function BillingProvider(props: BillingProviderProps) {
  const { baseUrl, organisationId, locale, labels, refetchOnFocus = true, initialData } = props;
  // The latest callbacks, without making a new client when the app passes new functions on each render.
  const callbacks = useRef(props);
  callbacks.current = props;
  const [store] = useState(() => new ReadStore());

  const client = useMemo(
    () =>
      createClient({
        baseUrl,
        fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
          const request = new Request(input, init);
          const token = await callbacks.current.getToken();
          if (token) request.headers.set('Authorization', `Bearer ${token}`);
          const answer = await (callbacks.current.fetch ?? globalThis.fetch)(request);
          if (answer.status === 401) callbacks.current.onUnauthorized?.();
          return answer;
        },
      }),
    [baseUrl],
  );

  if (initialData) {
    if (initialData.plans) store.seed(PLANS_KEY, initialData.plans);
    if (initialData.subscription) store.seed(orgKey(organisationId, 'subscription'), initialData.subscription.subscription);
    if (initialData.entitlements) store.seed(orgKey(organisationId, 'entitlements'), initialData.entitlements);
    if (initialData.credits) store.seed(orgKey(organisationId, 'credits'), initialData.credits);
  }

  const value = useMemo<BillingContextValue>(
    () => ({
      client,
      organisationId,
      labels: { ...defaultLabels, ...labels },
      format: createFormatter(locale),
      store,
      refresh: async () => {
        await Promise.all([store.refresh(`org:${organisationId}:`), store.refresh(PLANS_KEY)]);
      },
    }),
    // A new `labels` or `locale` object makes a new context: keep them stable (outside the component, or memoised).
    [client, organisationId, store, locale, labels],
  );

  useEffect(() => {
    if (!refetchOnFocus || typeof window === 'undefined') return;
    const onFocus = () => void value.refresh();
    const onVisible = () => document.visibilityState === 'visible' && onFocus();
    window.addEventListener('focus', onFocus);
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      window.removeEventListener('focus', onFocus);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [refetchOnFocus, value]);

  return <BillingContext.Provider value={value}>{props.children}</BillingContext.Provider>;
}

/** The provider's client, organisation, labels, formatter and `refresh()`; throws outside a `BillingProvider`. */
export function useBilling(): BillingContextValue {
  const value = useContext(BillingContext);
  if (!value) throw new Error('useBilling and the billing components need a <BillingProvider> above them');
  return value;
}

/** The provider's labels with a component's own over them. */
export function useLabels(own?: Partial<Labels>): Labels {
  const { labels } = useBilling();
  return useMemo(() => (own ? { ...labels, ...own } : labels), [labels, own]);
}
