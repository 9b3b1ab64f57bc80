import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PriceCatalog } from '../src/provider/price-catalog';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';


function tiersFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plans-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
  return file;
}

const plans = (t: TestApp) => t.http().get('/api/billing/plans').expect(200);
const pricesOf = async (t: TestApp, tier: string) => (await plans(t)).body.data.find((p: { tier: string }) => p.tier === tier).prices;
const errorLines = (lines: string[]) => lines.map((l) => JSON.parse(l)).filter((l) => l.level === 50);

describe('billing: GET /api/billing/plans against the provider (strict double)', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    fake = await startFakeProvider();
    fake.addPrice('price_pro_monthly', { currency: 'eur', unit_amount: 2900 });
    fake.addPrice('price_pro_yearly', { currency: 'eur', unit_amount: 29000, recurring: { ...fake.prices.get('price_pro_monthly')!.recurring, interval: 'year' } });
    fake.addPrice('price_pro_2024', { currency: 'eur', unit_amount: 1900, active: false });
    fake.addPrice('price_team_seat', { currency: 'eur', unit_amount: 1200, recurring: { interval: 'month', interval_count: 3, meter: null, usage_type: 'licensed' } });
    t = await startTestApp({
      env: {
        ...fakeProviderEnv(fake, 10_000),
        TIERS_FILE: tiersFile(),
        PAYPROVIDER_PRICE_PRO: 'price_pro_monthly,price_pro_yearly,price_pro_2024',
        PAYPROVIDER_PRICE_TEAM: 'price_team_seat,price_team_gone',
      },
      logLines,
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('lists every tier in table order, free first, with the prices the provider confirmed; public and cacheable', async () => {
    const res = await plans(t);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.body).toEqual({
      data: [
        {
          tier: 'free',
          per_seat: false,
          trial_days: 0,
          features: { api_access: false, audit_log: false },
          limits: { projects: 3, ai_tokens: 100000, users: 3, storage_gb: 0 },
          prices: [],
        },
        {
          tier: 'pro',
          per_seat: false,
          trial_days: 14,
          features: { api_access: true, audit_log: false },
          limits: { projects: 25, ai_tokens: 2000000, users: 10, storage_gb: 0 },
          prices: [
            { id: 'price_pro_monthly', interval: 'month', interval_count: 1, unit_amount: 2900, currency: 'EUR' },
            { id: 'price_pro_yearly', interval: 'year', interval_count: 1, unit_amount: 29000, currency: 'EUR' },
          ],
        },
        {
          tier: 'team',
          per_seat: true,
          trial_days: 0,
          features: { api_access: true, audit_log: true },
          // A per-seat tier's users limit is its max; its unit amount is per seat.
          limits: { projects: 100, ai_tokens: 10000000, users: 500, storage_gb: 100 },
          prices: [{ id: 'price_team_seat', interval: 'month', interval_count: 3, unit_amount: 1200, currency: 'EUR' }],
        },
      ],
      // A bare tier table sells no credit packs (spec §16.3).
      credit_packs: [],
    });
  });

  it('an unknown price and an inactive one are left out and logged at error level', () => {
    expect(errorLines(logLines)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ priceId: 'price_team_gone', msg: expect.stringMatching(/does not know this price/) }),
        expect.objectContaining({ priceId: 'price_pro_2024', msg: expect.stringMatching(/inactive/) }),
      ]),
    );
    expect(errorLines(logLines)).toHaveLength(2);
  });

  it('asks the provider for each configured price by id, through the SDK the double checks', () => {
    // startTestApp waited for the start's reads; nothing has reset the recorded requests since.
    expect(fake.requests.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      ['price_pro_2024', 'price_pro_monthly', 'price_pro_yearly', 'price_team_gone', 'price_team_seat'].map((id) => `GET /v1/prices/${id}`),
    );
  });

  it('a price that becomes inactive is left out at the next refresh', async () => {
    fake.prices.get('price_pro_yearly')!.active = false;
    await t.app.get(PriceCatalog).refresh();
    expect((await pricesOf(t, 'pro')).map((p: { id: string }) => p.id)).toEqual(['price_pro_monthly']);
    fake.prices.get('price_pro_yearly')!.active = true;
    await t.app.get(PriceCatalog).refresh();
    expect(await pricesOf(t, 'pro')).toHaveLength(2);
  });
});

describe('billing: the plan list when the provider is down at start', () => {
  let fake: FakeProvider;
  const env = (fake: FakeProvider) => ({ ...fakeProviderEnv(fake, 10_000), PAYPROVIDER_PRICE_PRO: 'price_pro' });

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro'] });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it('a provider that does not answer does not hold the start; the list fills once it answers', async () => {
    fake.hold('/v1/prices');
    const t = await startTestApp({ env: env(fake), skipPriceWait: true });
    try {
      await t.http().get('/api/health').expect(200);
      expect(fake.held()).toBe(1);
      expect(await pricesOf(t, 'pro')).toEqual([]);
      fake.release();
      const prices = await waitFor('the price once the provider answers', async () => ((await pricesOf(t, 'pro')).length ? pricesOf(t, 'pro') : undefined));
      expect(prices).toEqual([{ id: 'price_pro', interval: 'month', interval_count: 1, unit_amount: 2000, currency: 'USD' }]);
    } finally {
      fake.release();
      await t.close();
    }
  });

  it('a provider failing at start: no prices yet, the next refresh fills them, and a later failure keeps them', async () => {
    fake.failPath('/v1/prices', { status: 503 });
    const t = await startTestApp({ env: env(fake) });
    try {
      expect(await pricesOf(t, 'pro')).toEqual([]);
      fake.failPath('/v1/prices', undefined);
      await t.app.get(PriceCatalog).refresh();
      expect(await pricesOf(t, 'pro')).toHaveLength(1);
      fake.failPath('/v1/prices', { status: 503 });
      await t.app.get(PriceCatalog).refresh();
      expect(await pricesOf(t, 'pro')).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
});

describe('billing: GET /api/billing/plans in sandbox mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("lists the sandbox's own prices: for every paid tier a monthly one and a yearly one at 10 × monthly", async () => {
    const { body } = await plans(t);
    expect(body.data.map((p: { tier: string }) => p.tier)).toEqual(['free', 'pro', 'team', 'enterprise']);
    expect(body.data[0]).toEqual({
      tier: 'free',
      per_seat: false,
      trial_days: 0,
      features: { api_access: false, audit_log: false, sso: false },
      limits: { projects: 3, ai_tokens: 100000, users: 3 },
      prices: [],
    });
    expect(body.data[3].features).toEqual({ api_access: true, audit_log: true, sso: true });
    for (const [tier, monthly] of [
      ['pro', 2900],
      ['team', 9900],
      ['enterprise', 49900],
    ] as const) {
      expect(await pricesOf(t, tier)).toEqual([
        { id: `price_sandbox_${tier}`, interval: 'month', interval_count: 1, unit_amount: monthly, currency: 'EUR' },
        { id: `price_sandbox_${tier}_yearly`, interval: 'year', interval_count: 1, unit_amount: monthly * 10, currency: 'EUR' },
      ]);
    }
  });
});
