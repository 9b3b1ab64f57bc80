import Stripe from 'stripe';
import { FAKE_SECRET_KEY, FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

type User = Awaited<ReturnType<typeof createUserWithSession>>;
type Price = { id: string; unit_amount: number; currency: string };

const pricesOf = (body: { data: { tier: string; prices: Price[] }[] }, tier: string) => body.data.find((p) => p.tier === tier)!.prices;

/** The provider's currency options (spec §17) as the strict double describes them, through the real SDK. */
describe('currencies: the strict double', () => {
  let fake: FakeProvider;
  let stripe: Stripe;

  beforeAll(async () => {
    fake = await startFakeProvider();
    const api = new URL(fake.url);
    stripe = new Stripe(FAKE_SECRET_KEY, { host: api.hostname, port: Number(api.port), protocol: 'http', maxNetworkRetries: 0 });
    fake.addPrice('price_multi', { currency: 'usd', unit_amount: 2000, currency_options: { eur: { unit_amount: 1800 }, gbp: { unit_amount: 1600, tax_behavior: 'exclusive' } } });
  });
  afterAll(() => fake.close());

  it('answers currency_options only when expanded, each in the provider shape, its own currency among them', async () => {
    const plain = await stripe.prices.retrieve('price_multi');
    expect(plain).not.toHaveProperty('currency_options');
    const expanded = await stripe.prices.retrieve('price_multi', { expand: ['currency_options'] });
    expect(expanded.currency_options).toEqual({
      usd: { custom_unit_amount: expect.any(Object), tax_behavior: 'unspecified', unit_amount: 2000, unit_amount_decimal: '2000' },
      eur: { custom_unit_amount: null, tax_behavior: 'unspecified', unit_amount: 1800, unit_amount_decimal: '1800' },
      gbp: { custom_unit_amount: null, tax_behavior: 'exclusive', unit_amount: 1600, unit_amount_decimal: '1600' },
    });
    await expect(stripe.prices.retrieve('price_multi', { expand: ['product'] })).rejects.toMatchObject({ statusCode: 400, param: 'expand' });
  });

  it("opens a checkout in a currency of the price's options, and refuses one it lacks naming `currency`", async () => {
    const base = { mode: 'subscription' as const, line_items: [{ price: 'price_multi', quantity: 1 }], success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' };
    const session = await stripe.checkout.sessions.create({ ...base, currency: 'gbp' });
    expect(session.currency).toBe('gbp');
    expect((await stripe.checkout.sessions.create(base)).currency).toBe('usd');
    await expect(stripe.checkout.sessions.create({ ...base, currency: 'jpy' })).rejects.toMatchObject({
      statusCode: 400,
      type: 'StripeInvalidRequestError',
      param: 'currency',
      message: "The price specified supports currencies of `usd`, `eur`, `gbp` which doesn't include the expected currency of `jpy`.",
    });
  });
});

describe('currencies: GET /api/billing/plans?currency= and checkout with currency (strict double)', () => {
  let fake: FakeProvider;
  let t: TestApp;
  let orgId: string;
  let owner: User;

  beforeAll(async () => {
    fake = await startFakeProvider();
    const yearly = { interval: 'year', interval_count: 1, meter: null, trial_period_days: null, usage_type: 'licensed' };
    fake.addPrice('price_pro_m', { currency: 'usd', unit_amount: 2000, currency_options: { eur: { unit_amount: 1800 }, gbp: { unit_amount: 1600 } } });
    fake.addPrice('price_pro_y', { currency: 'usd', unit_amount: 20000, recurring: yearly, currency_options: { eur: { unit_amount: 18000 }, gbp: { unit_amount: 16000 } } });
    // No pound option; its euro option has no fixed amount (a customer-chosen amount).
    fake.addPrice('price_ent_m', { currency: 'usd', unit_amount: 50000, currency_options: { eur: { unit_amount: 45000 } } });
    t = await startTestApp({
      env: { ...fakeProviderEnv(fake, 10_000), PAYPROVIDER_PRICE_PRO: 'price_pro_m,price_pro_y', PAYPROVIDER_PRICE_ENTERPRISE: 'price_ent_m' },
    });
    orgId = (await createOrganisation(t)).id;
    owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('the catalog asks the provider for each price with its currency options expanded', () => {
    const reads = fake.requests.filter((r) => r.path.startsWith('/v1/prices/'));
    expect(reads.map((r) => r.path).sort()).toEqual(['/v1/prices/price_ent_m', '/v1/prices/price_pro_m', '/v1/prices/price_pro_y']);
    expect(reads.every((r) => JSON.stringify(r.query) === JSON.stringify({ expand: ['currency_options'] }))).toBe(true);
  });

  it("answers each price's amount in the currency asked for, in any case; without one, each price's own", async () => {
    fake.reset();
    const own = await t.http().get('/api/billing/plans').expect(200);
    expect(pricesOf(own.body, 'pro').map((p) => [p.unit_amount, p.currency])).toEqual([[2000, 'USD'], [20000, 'USD']]);
    for (const currency of ['eur', 'EUR', 'Eur']) {
      const res = await t.http().get('/api/billing/plans').query({ currency }).expect(200);
      expect(pricesOf(res.body, 'pro')).toEqual([
        { id: 'price_pro_m', interval: 'month', interval_count: 1, unit_amount: 1800, currency: 'EUR' },
        { id: 'price_pro_y', interval: 'year', interval_count: 1, unit_amount: 18000, currency: 'EUR' },
      ]);
      expect(pricesOf(res.body, 'enterprise')).toEqual([{ id: 'price_ent_m', interval: 'month', interval_count: 1, unit_amount: 45000, currency: 'EUR' }]);
      expect(pricesOf(res.body, 'free')).toEqual([]);
    }
    const usd = await t.http().get('/api/billing/plans?currency=usd').expect(200);
    expect(usd.body).toEqual(own.body);
    // Read from what the catalog holds: nothing is asked of the provider per request.
    expect(fake.requests).toEqual([]);
  });

  it('400 currency_unavailable when a price has no such option; 400 validation_failed for a malformed currency', async () => {
    fake.reset();
    const gbp = await t.http().get('/api/billing/plans?currency=gbp').expect(400);
    expect(gbp.body).toMatchObject({ code: 'currency_unavailable', message: expect.stringContaining('price_ent_m') });
    for (const query of ['currency=euro', 'currency=e1r', 'currency=', 'currency=%20eur', 'currency=eur&currency=gbp', 'currency[x]=eur']) {
      const res = await t.http().get(`/api/billing/plans?${query}`).expect(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect(fake.requests).toEqual([]);
  });

  it("passes the currency to the provider as the session's currency (lower case)", async () => {
    fake.reset();
    const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro', interval: 'year', currency: 'GBP' }).expect(201);
    const sent = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions');
    expect(sent).toHaveLength(1);
    expect(sent[0].body).toMatchObject({ line_items: [{ price: 'price_pro_y', quantity: '1' }], currency: 'gbp' });
    expect(fake.sessions.get(res.body.session_id)!.currency).toBe('gbp');

    // The same plan in the same currency answers the open session; in another currency it is another checkout.
    const again = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro', interval: 'year', currency: 'gbp' }).expect(200);
    expect(again.body.session_id).toBe(res.body.session_id);
    const eur = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro', interval: 'year', currency: 'eur' }).expect(201);
    expect(eur.body.session_id).not.toBe(res.body.session_id);
    expect(fake.sessions.get(res.body.session_id)!.status).toBe('expired');
    expect(fake.sessions.get(eur.body.session_id)!.currency).toBe('eur');
  });

  it('400 currency_unavailable for a currency the price lacks and validation_failed for a malformed one: nothing sent to the provider', async () => {
    const org = (await createOrganisation(t, 'No pounds')).id;
    const admin = await createUserWithSession(t, { org, role: 'admin' });
    fake.reset();
    const lacking = await t.http().post('/api/billing/checkout').set(admin.auth).send({ organisation_id: org, tier: 'enterprise', currency: 'gbp' }).expect(400);
    expect(lacking.body).toMatchObject({ code: 'currency_unavailable', message: expect.stringContaining('GBP') });
    for (const currency of ['pounds', 'g8p', 12, ['gbp']]) {
      const res = await t.http().post('/api/billing/checkout').set(admin.auth).send({ organisation_id: org, tier: 'pro', currency }).expect(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect(fake.requests).toEqual([]);
    expect(await t.db.query(`SELECT session_id FROM open_checkouts WHERE organisation_id = $1 AND session_id IS NOT NULL`, [org])).toEqual([]);
  });
});

describe('currencies: the sandbox sells in eur, usd and gbp', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("lists every price in each of the three currencies (a yearly price is 10 × the monthly one in each)", async () => {
    const monthly: Record<string, Record<string, number>> = {
      eur: { pro: 2900, team: 9900, enterprise: 49900 },
      usd: { pro: 3200, team: 10900, enterprise: 54900 },
      gbp: { pro: 2500, team: 8400, enterprise: 42400 },
    };
    for (const [currency, amounts] of Object.entries(monthly)) {
      const { body } = await t.http().get('/api/billing/plans').query({ currency }).expect(200);
      for (const [tier, amount] of Object.entries(amounts)) {
        expect(pricesOf(body, tier)).toEqual([
          { id: `price_sandbox_${tier}`, interval: 'month', interval_count: 1, unit_amount: amount, currency: currency.toUpperCase() },
          { id: `price_sandbox_${tier}_yearly`, interval: 'year', interval_count: 1, unit_amount: amount * 10, currency: currency.toUpperCase() },
        ]);
      }
    }
    const jpy = await t.http().get('/api/billing/plans?currency=jpy').expect(400);
    expect(jpy.body.code).toBe('currency_unavailable');
  });

  it("a checkout in pounds is paid in pounds: its page, its subscription and its invoice", async () => {
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro', currency: 'gbp' }).expect(201);
    const path = new URL(res.body.url).pathname;
    const page = await t.http().get(path).expect(200);
    expect(page.text).toContain('data-currency="GBP"');
    expect(page.text).toContain('<label><input type="radio" name="interval" value="month" data-unit-amount="2500" checked> £25.00 per month</label>');
    expect(page.text).toContain('<button type="submit" data-pay>Pay £25.00</button>');
    await t.http().post(`${path}/pay`).type('form').send('total=2500').expect(303);

    const report = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: res.body.session_id }).expect(200);
    expect(report.body).toMatchObject({ amount_total: 2500, currency: 'GBP', tier: 'pro' });
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toEqual([expect.objectContaining({ amount_paid: 2500, currency: 'GBP' })]);
    const [sub] = await t.db.query(`SELECT currency FROM sandbox_subscriptions WHERE metadata ->> 'organisation_id' = $1`, [orgId]);
    expect(sub.currency).toBe('gbp');
    // A change is priced in its currency too: a year of pro is 10 × £25.
    const later = await t.http().post('/api/billing/subscription/preview').set(owner.auth).send({ organisation_id: orgId, interval: 'year' }).expect(200);
    expect(later.body).toMatchObject({ currency: 'GBP' });
    expect(later.body.lines.map((l: { amount: number }) => l.amount)).toContain(25000);
  });
});
