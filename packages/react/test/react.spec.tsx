import { ServiceError, type Schemas } from '@billing-licensing/client';
import type { ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { BillingProvider, createFormatter, CreditBalance, Paywall, PlanManager, PricingTable, UsageMeter, type InitialData } from '../src/index';
import { ReadStore } from '../src/store';

// The components' own logic without a browser: Intl formatting, the read cache, and the markup each component
// renders from answers of the service's shape (the browser test, test/browser-react.e2e-spec.ts, runs them
// against the real service).

const NOON = Date.UTC(2026, 10, 24, 12) / 1000;

describe('createFormatter: amounts, numbers and dates through Intl', () => {
  it('writes minor units in the currency\'s own minor unit and the locale\'s way', () => {
    const en = createFormatter('en-US');
    expect(en.money(2900, 'EUR')).toBe('€29.00');
    expect(en.money(2900, 'eur')).toBe('€29.00');
    expect(en.money(500, 'JPY')).toBe('¥500');
    expect(en.money(1234, 'BHD')).toBe('BHD\u00a01.234');
    expect(createFormatter('de-DE').money(2900, 'EUR')).toBe('29,00\u00a0€');
    expect(en.number(2_000_000)).toBe('2,000,000');
    expect(createFormatter('de-DE').number(2_000_000)).toBe('2.000.000');
    expect(en.date(NOON)).toBe('Nov 24, 2026');
    expect(createFormatter('en-GB').date(NOON)).toBe('24 Nov 2026');
  });
});

describe('ReadStore: the provider\'s cache of reads', () => {
  it('reads a key once for every reader, keeps the data shown while it reads again, and types a failure', async () => {
    const store = new ReadStore();
    let calls = 0;
    let fail = false;
    const read = async () => {
      calls++;
      if (fail) throw new ServiceError(null, { code: 'network_error', message: 'GET /api/billing/plans: the service could not be reached (ECONNREFUSED)' });
      return { n: calls };
    };
    const seen: number[] = [];
    store.subscribe('org:a:plans', read, () => seen.push(1));
    store.subscribe('org:a:plans', read, () => seen.push(2));
    expect(store.snapshot('org:a:plans')).toEqual({ data: undefined, loading: true, error: null });
    await store.load('org:a:plans');
    expect(calls).toBe(1);
    expect(store.snapshot('org:a:plans')).toEqual({ data: { n: 1 }, loading: false, error: null });
    expect(seen).toEqual([1, 2]);

    fail = true;
    await store.refresh('org:a:');
    const failed = store.snapshot<{ n: number }>('org:a:plans');
    expect(failed.data).toEqual({ n: 1 });
    expect(failed.error).toBeInstanceOf(ServiceError);
    expect(failed.error?.code).toBe('network_error');

    // Anything else thrown (the app's getToken) arrives as a ServiceError too, with its cause.
    store.subscribe('org:b:plans', () => Promise.reject(new Error('no token')), () => undefined);
    await store.load('org:b:plans');
    expect(store.snapshot('org:b:plans').error).toMatchObject({ code: 'network_error', message: 'no answer network_error: no token', cause: new Error('no token') });
  });

  it('refresh(prefix) reads again only that organisation\'s keys with readers; the others when next shown', async () => {
    const store = new ReadStore();
    const calls: string[] = [];
    const reader = (key: string) => async () => {
      calls.push(key);
      return key;
    };
    const stop = store.subscribe('org:a:subscription', reader('a'), () => undefined);
    store.subscribe('org:b:subscription', reader('b'), () => undefined);
    await Promise.all([store.load('org:a:subscription'), store.load('org:b:subscription')]);
    stop();
    calls.length = 0;
    await store.refresh('org:a:');
    await store.refresh('org:c:');
    expect(calls).toEqual([]);
    store.subscribe('org:a:subscription', reader('a'), () => undefined);
    await store.load('org:a:subscription');
    expect(calls).toEqual(['a']);
  });
});

const plans: Schemas['PlanList'] = {
  data: [
    { tier: 'free', per_seat: false, trial_days: 0, features: { api_access: false, audit_log: false, sso: false }, limits: { projects: 3, ai_tokens: 100000, users: 3 }, prices: [] },
    {
      tier: 'pro',
      per_seat: false,
      trial_days: 0,
      features: { api_access: true, audit_log: false, sso: false },
      limits: { projects: 25, ai_tokens: 2000000, users: 10 },
      prices: [
        { id: 'price_pro_m', interval: 'month', interval_count: 1, unit_amount: 2900, currency: 'EUR' },
        { id: 'price_pro_y', interval: 'year', interval_count: 1, unit_amount: 29000, currency: 'EUR' },
      ],
    },
    {
      tier: 'team',
      per_seat: true,
      trial_days: 14,
      features: { api_access: true, audit_log: true, sso: false },
      limits: { projects: 100, ai_tokens: 10000000, users: 50 },
      prices: [{ id: 'price_team_m', interval: 'month', interval_count: 1, unit_amount: 9900, currency: 'EUR' }],
    },
  ],
  credit_packs: [],
};

const limit = (used: number, max: number): Schemas['LimitEntitlement'] => ({ used, limit: max, at_capacity: used >= max, overage: 'block', source: 'tier' });
const entitlements = (features: Partial<Schemas['EntitlementsResponse']['features']>): Schemas['EntitlementsResponse'] => ({
  organisation_id: '00000000-0000-4000-8000-000000000001',
  tier: 'pro',
  plan_version: 1,
  is_active: true,
  is_expired: false,
  version: 1,
  seats: null,
  features: { api_access: false, audit_log: false, sso: false, ...features },
  limits: { projects: limit(25, 25), ai_tokens: limit(1_700_000, 2_000_000), users: limit(2, 10) },
  overrides: [],
});

function render(node: ReactNode, initialData: InitialData, locale = 'en-US') {
  return renderToStaticMarkup(
    <BillingProvider baseUrl="http://billing.invalid" organisationId="00000000-0000-4000-8000-000000000001" getToken={() => null} locale={locale} initialData={initialData}>
      {node}
    </BillingProvider>,
  );
}

describe('the components\' markup (server-rendered from the cache)', () => {
  it('PricingTable: prices per interval, seats for a per-seat tier, the trial badge, features, the current plan', () => {
    const html = render(<PricingTable />, { plans, subscription: { subscription: null } });
    expect(html).toContain('<legend>Billing period</legend>');
    expect(html).toContain('€29.00 per month');
    expect(html).toContain('€99.00 per seat per month');
    expect(html).toMatch(/<label for="[^"]+">Seats<\/label><input id="[^"]+" type="number"[^>]* min="1" max="50"/);
    expect(html).toContain('14-day free trial');
    expect(html).toContain('>Start a free trial of Team</button>');
    expect(html).toContain('>Choose Pro</button>');
    expect(html).toContain('API access<span class="bl-visually-hidden">: Included</span>');
    expect(html).toContain('<span class="bl-badge bl-badge-current">Current plan</span>');
    // Free is current and has no button.
    expect(html).not.toContain('Choose Free');
  });

  it('PricingTable: another locale and other labels', () => {
    const html = render(<PricingTable labels={{ choose: (tier) => `${tier} wählen`, perInterval: (amount, interval) => `${amount} pro ${interval === 'year' ? 'Jahr' : 'Monat'}` }} />, { plans, subscription: { subscription: null } }, 'de-DE');
    expect(html).toContain('29,00\u00a0€ pro Monat');
    expect(html).toContain('>Pro wählen</button>');
  });

  it('PlanManager: the plan, its period, a pending change with "keep my current plan", seats for a per-seat tier', () => {
    const subscription: Schemas['SubscriptionView'] = {
      id: 'sub_1',
      tier: 'team',
      status: 'active',
      interval: 'month',
      seats: 5,
      current_period_end: NOON,
      cancel_at_period_end: false,
      trial_end: null,
      pending_change: { tier: 'team', interval: 'month', seats: 3, effective_at: NOON },
      plan_version: 1,
    };
    const html = render(<PlanManager />, { plans, subscription: { subscription } });
    expect(html).toContain('<dt>Renews on</dt><dd>Nov 24, 2026</dd>');
    expect(html).toContain('Changes to Team (3 seats) on Nov 24, 2026');
    expect(html).toContain('>Keep my current plan</button>');
    expect(html).toContain('>Cancel at the end of the period</button>');
    expect(html).toMatch(/<label for="[^"]+">Seats<\/label>/);
  });

  it('UsageMeter and Paywall: at capacity, near the limit, a feature in force or the upgrade prompt', () => {
    const data = { entitlements: entitlements({ api_access: true }) };
    expect(render(<UsageMeter metric="projects" />, data)).toContain('data-state="at-capacity"');
    expect(render(<UsageMeter metric="ai_tokens" />, data)).toContain('Nearly at the limit');
    expect(render(<UsageMeter metric="users" />, data)).toContain('data-state="ok"');
    expect(render(<Paywall feature="api_access">the key</Paywall>, data)).toBe('the key');
    const locked = render(<Paywall feature="sso">the key</Paywall>, data);
    expect(locked).not.toContain('the key');
    expect(locked).toContain('Single sign-on is not in your plan.');
    expect(locked).toContain('aria-expanded="false"');
  });

  it('CreditBalance: the included amount left, the balance, what is reserved and available, each grant, a buy button per pack', () => {
    const grant = (id: string, remaining: number, expires_at: string | null): Schemas['CreditGrantRecord'] => ({
      id,
      metric: 'ai_tokens',
      amount: 1_000_000,
      remaining,
      category: 'paid',
      priority: 50,
      source: 'top_up',
      effective_at: '2026-11-24T12:00:00Z',
      expires_at,
      voided_at: null,
      note: null,
      created_at: '2026-11-24T12:00:00Z',
    });
    const credits: Schemas['CreditsResponse'] = {
      data: [
        {
          metric: 'ai_tokens',
          policy: 'credits',
          included: { limit: 2_000_000, used: 2_000_000, remaining: 0 },
          balance: 1_250_000,
          reserved: 50_000,
          available: 1_200_000,
          grants: [grant('00000000-0000-4000-8000-00000000000a', 250_000, '2026-12-24T12:00:00Z'), grant('00000000-0000-4000-8000-00000000000b', 1_000_000, null)],
          auto_recharge: null,
        },
      ],
    };
    const withPacks: Schemas['PlanList'] = {
      ...plans,
      credit_packs: [{ pack: 'tokens_1m', metric: 'ai_tokens', amount: 1_000_000, expires_after_days: 365, prices: [{ id: 'price_tokens_1m', interval: null, interval_count: null, unit_amount: 1000, currency: 'EUR' }] }],
    };
    const html = render(<CreditBalance metric="ai_tokens" />, { plans: withPacks, entitlements: entitlements({}), credits });
    expect(html).toContain('<h2 id="');
    expect(html).toContain('AI tokens credits</h2>');
    expect(html).toContain('0 of 2,000,000 included this period left');
    expect(html).toContain('Credit balance: 1,250,000');
    expect(html).toContain('Held for work in progress: 50,000');
    expect(html).toContain('Available now: 1,200,000');
    expect(html).toContain('<li>250,000 expire on Dec 24, 2026</li><li>1,000,000 never expire</li>');
    expect(html).toContain('>Buy 1,000,000 AI tokens for €10.00</button><span class="bl-muted"> valid for 365 days</span>');

    // A metric the tier in force does not draw credits for: its usage from the entitlements, no balance counted.
    const notCounted = render(<CreditBalance metric="projects" />, { plans: withPacks, entitlements: entitlements({}), credits });
    expect(notCounted).toContain('0 of 25 included this period left');
    expect(notCounted).not.toContain('Credit balance');
    expect(notCounted).toContain('Your plan does not draw on Projects credits: they count once it does.');
    expect(notCounted).not.toContain('Available now');
    expect(notCounted).not.toContain('<button');
  });

  it('renders "Loading…" while nothing is cached (nothing is fetched on the server)', () => {
    expect(render(<PricingTable />, {})).toBe('<p class="bl-loading" role="status">Loading…</p>');
  });

  it('PricingTable in a currency reads its own list: the one in the prices\' own currencies does not stand in for it', () => {
    expect(render(<PricingTable currency="GBP" />, { plans, subscription: { subscription: null } })).toBe('<p class="bl-loading" role="status">Loading…</p>');
    expect(render(<PricingTable />, { plans, subscription: { subscription: null } })).toContain('€29.00 per month');
  });

  it('CreditBalance in a currency reads its own list too: a pack is never shown in one currency and sold in another', () => {
    const credits: Schemas['CreditsResponse'] = {
      data: [{ metric: 'ai_tokens', policy: 'credits', included: { limit: 100, used: 0, remaining: 100 }, balance: 0, reserved: 0, available: 100, grants: [], auto_recharge: null }],
    };
    const withPacks: Schemas['PlanList'] = {
      ...plans,
      credit_packs: [{ pack: 'tokens_1m', metric: 'ai_tokens', amount: 1_000_000, expires_after_days: null, prices: [{ id: 'price_tokens_1m', interval: null, interval_count: null, unit_amount: 1000, currency: 'EUR' }] }],
    };
    expect(render(<CreditBalance metric="ai_tokens" currency="gbp" />, { plans: withPacks, entitlements: entitlements({}), credits })).toContain('Loading…');
    expect(render(<CreditBalance metric="ai_tokens" />, { plans: withPacks, entitlements: entitlements({}), credits })).toContain('>Buy 1,000,000 AI tokens for €10.00</button>');
  });
});
