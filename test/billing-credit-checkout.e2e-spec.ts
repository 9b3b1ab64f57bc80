import { FAKE_SECRET_KEY, FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { packsTiersFile } from './support/credit-packs';

const APP = 'https://app.example.com';
type User = Awaited<ReturnType<typeof createUserWithSession>>;
const ONE_TIME = { recurring: null, type: 'one_time' };

/** POST /api/billing/credits/checkout and the pack's prices against the strict provider double, through the real SDK (spec §16.3). */
describe('billing: credit packs at the provider', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro'] });
    fake.addPrice('price_1m', { ...ONE_TIME, currency: 'eur', unit_amount: 1000, currency_options: { usd: { unit_amount: 1100 } } });
    fake.addPrice('price_1m_2025', { ...ONE_TIME, currency: 'eur', unit_amount: 900, active: false });
    // A recurring price cannot sell a pack: left out of the plan list.
    fake.addPrice('price_5m_monthly', { currency: 'eur', unit_amount: 4000 });
    t = await startTestApp({
      env: {
        ...fakeProviderEnv(fake, 2000),
        APP_URL: APP,
        TIERS_FILE: packsTiersFile({
          tiers: { free: { projects: 3, ai_tokens: 100_000, users: 3 }, pro: { projects: 25, ai_tokens: 2_000_000, users: 10 } },
          credit_packs: {
            tokens_1m: { metric: 'ai_tokens', amount: 1_000_000, expires_after_days: 365 },
            tokens_5m: { metric: 'ai_tokens', amount: 5_000_000 },
            tokens_10m: { metric: 'ai_tokens', amount: 10_000_000 },
            tokens_20m: { metric: 'ai_tokens', amount: 20_000_000 },
          },
        }),
        PAYPROVIDER_PRICE_PRO: 'price_pro',
        PAYPROVIDER_PRICE_PACK_TOKENS_1M: 'price_1m,price_1m_2025,price_1m_gone',
        PAYPROVIDER_PRICE_PACK_TOKENS_5M: 'price_5m_monthly',
        // Made at the provider only after the start: the catalog never read it.
        PAYPROVIDER_PRICE_PACK_TOKENS_20M: 'price_20m_late',
      },
      logLines,
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  async function ownerOfNewOrg(): Promise<{ orgId: string; owner: User }> {
    const orgId = (await createOrganisation(t)).id;
    return { orgId, owner: await createUserWithSession(t, { org: orgId, role: 'owner' }) };
  }
  const buy = (user: User, body: Record<string, unknown>) => t.http().post('/api/billing/credits/checkout').set(user.auth).send(body);
  const customerOf = async (orgId: string) => (await t.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [orgId]))[0].provider_customer_id;

  it("lists each pack's one-time prices the provider confirmed; a recurring, inactive or unknown one is left out and logged", async () => {
    const res = await t.http().get('/api/billing/plans').expect(200);
    expect(res.body.credit_packs).toEqual([
      {
        pack: 'tokens_1m',
        metric: 'ai_tokens',
        amount: 1_000_000,
        expires_after_days: 365,
        prices: [{ id: 'price_1m', interval: null, interval_count: null, unit_amount: 1000, currency: 'EUR' }],
      },
      { pack: 'tokens_5m', metric: 'ai_tokens', amount: 5_000_000, expires_after_days: null, prices: [] },
      { pack: 'tokens_10m', metric: 'ai_tokens', amount: 10_000_000, expires_after_days: null, prices: [] },
      { pack: 'tokens_20m', metric: 'ai_tokens', amount: 20_000_000, expires_after_days: null, prices: [] },
    ]);
    const errors = logLines.map((l) => JSON.parse(l)).filter((l) => l.level === 50 && /price left out/.test(l.msg));
    expect(errors.map((e) => [e.priceId, e.msg]).sort()).toEqual([
      ['price_1m_2025', 'plan list: price left out: the price is inactive at the payment provider'],
      ['price_1m_gone', 'plan list: price left out: the payment provider does not know this price'],
      ['price_20m_late', 'plan list: price left out: the payment provider does not know this price'],
      ['price_5m_monthly', "plan list: price left out: a credit pack's price is not a one-time price with a fixed unit amount"],
    ]);
  });

  it("makes the organisation's customer first, then a checkout of mode payment for price × quantity with an invoice, tagged for the grant", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const res = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', quantity: 4 }).expect(201);
    expect(res.body).toEqual({ session_id: expect.stringMatching(/^cs_test_/), url: `${fake.url}/pay/${res.body.session_id}` });

    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/customers', 'POST /v1/checkout/sessions']);
    expect(fake.requests.every((r) => r.headers.authorization === `Bearer ${FAKE_SECRET_KEY}` && r.headers['idempotency-key'])).toBe(true);
    expect(fake.requests[0].body).toEqual({ metadata: { organisation_id: orgId } });
    const customer = await customerOf(orgId);
    expect(customer).toMatch(/^cus_/);
    expect(fake.customers.get(customer)!.metadata).toEqual({ organisation_id: orgId });
    const metadata = { organisation_id: orgId, pack: 'tokens_1m', quantity: '4', purpose: 'credit_pack' };
    expect(fake.requests[1].body).toEqual({
      mode: 'payment',
      line_items: [{ price: 'price_1m', quantity: '4' }],
      client_reference_id: orgId,
      customer,
      metadata,
      invoice_creation: { enabled: 'true', invoice_data: { metadata } },
      success_url: `${APP}/billing/success?session_id={CHECKOUT_SESSION_ID}&credits=1`,
      cancel_url: `${APP}/billing/cancel`,
    });

    // The next purchase reuses the customer; the given return URLs are used.
    fake.reset();
    const urls = { success_url: `${APP}/credits/thanks?s={CHECKOUT_SESSION_ID}`, cancel_url: `${APP}/credits` };
    await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', ...urls }).expect(201);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/checkout/sessions']);
    expect(fake.requests[0].body).toMatchObject({ customer, line_items: [{ price: 'price_1m', quantity: '1' }], metadata: { quantity: '1' }, ...urls });
  });

  it("sells in a currency of the pack price's options (any case, the session's currency); 400 currency_unavailable for another, before any request", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const res = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', quantity: 2, currency: 'USD' }).expect(201);
    const sessionCreate = fake.requests.find((r) => r.path === '/v1/checkout/sessions')!;
    expect(sessionCreate.body).toMatchObject({ mode: 'payment', currency: 'usd', line_items: [{ price: 'price_1m', quantity: '2' }] });
    expect(fake.sessions.get(res.body.session_id)).toMatchObject({ currency: 'usd' });

    fake.reset();
    const other = await ownerOfNewOrg();
    const refused = await buy(other.owner, { organisation_id: other.orgId, pack: 'tokens_1m', currency: 'gbp' }).expect(400);
    expect(refused.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.stringContaining('GBP'), code: 'currency_unavailable' });
    expect((await buy(other.owner, { organisation_id: other.orgId, pack: 'tokens_1m', currency: 'dollars' }).expect(400)).body.code).toBe('validation_failed');
    expect(fake.requests).toEqual([]);
    expect(await customerOf(other.orgId)).toBeNull();
  });

  it("a price the catalog never read: the currency is left to the provider, whose refusal is the same 400 currency_unavailable", async () => {
    fake.addPrice('price_20m_late', { ...ONE_TIME, currency: 'eur', unit_amount: 15000 });
    const { orgId, owner } = await ownerOfNewOrg();
    const refused = await buy(owner, { organisation_id: orgId, pack: 'tokens_20m', currency: 'gbp' }).expect(400);
    expect(refused.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.stringContaining('GBP'), code: 'currency_unavailable' });
    const asked = fake.requests.filter((r) => r.path === '/v1/checkout/sessions');
    expect(asked.map((r) => r.body)).toEqual([expect.objectContaining({ currency: 'gbp', line_items: [{ price: 'price_20m_late', quantity: '1' }] })]);
    expect(fake.sessions.size).toBe(0);

    const sold = await buy(owner, { organisation_id: orgId, pack: 'tokens_20m', currency: 'eur' }).expect(201);
    expect(fake.sessions.get(sold.body.session_id)).toMatchObject({ currency: 'eur', mode: 'payment' });
  });

  it('replaces a stored customer the provider no longer knows, then checks out with the new one', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const gone = fake.addCustomer();
    await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [orgId, gone]);
    fake.deleteCustomer(gone);
    await buy(owner, { organisation_id: orgId, pack: 'tokens_1m' }).expect(201);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/checkout/sessions', 'POST /v1/customers', 'POST /v1/checkout/sessions']);
    const replaced = await customerOf(orgId);
    expect(replaced).not.toBe(gone);
    expect(fake.requests[2].body).toMatchObject({ customer: replaced });
  });

  it('sends the checkout options (promotion codes, automatic tax with the customer kept up to date)', async () => {
    const app = await startTestApp({
      databaseUrl: t.databaseUrl,
      env: { ...fakeProviderEnv(fake, 10_000), APP_URL: APP, TIERS_FILE: packsTiersFile(), PAYPROVIDER_PRICE_PACK_TOKENS_1M: 'price_1m', PAYPROVIDER_ALLOW_PROMOTION_CODES: 'true', PAYPROVIDER_AUTOMATIC_TAX: 'true' },
    });
    try {
      const orgId = (await createOrganisation(app)).id;
      const owner = await createUserWithSession(app, { org: orgId, role: 'owner' });
      fake.reset();
      await app.http().post('/api/billing/credits/checkout').set(owner.auth).send({ organisation_id: orgId, pack: 'tokens_1m' }).expect(201);
      expect(fake.requests[1].body).toMatchObject({
        allow_promotion_codes: 'true',
        automatic_tax: { enabled: 'true' },
        tax_id_collection: { enabled: 'true' },
        customer_update: { address: 'auto', name: 'auto' },
      });
    } finally {
      await app.close();
    }
  });

  it('400 pack_not_for_sale for a pack without a price, invalid_pack for another name: the provider is not called', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const res = await buy(owner, { organisation_id: orgId, pack: 'tokens_10m' }).expect(400);
    expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.stringContaining('tokens_10m'), code: 'pack_not_for_sale' });
    expect((await buy(owner, { organisation_id: orgId, pack: 'pro' }).expect(400)).body.code).toBe('invalid_pack');
    expect(fake.requests).toEqual([]);
    expect(await customerOf(orgId)).toBeNull();
  });

  it('a provider failure answers 500 (503 when rate-limited); a retry after it buys once', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    fake.failPath('/v1/checkout/sessions', { status: 500 });
    const failed = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m' }).expect(500);
    expect(failed.body.code).toBe('payment_provider_error');
    expect(JSON.stringify(failed.body)).not.toMatch(/sk_test|Injected/);
    fake.failPath('/v1/checkout/sessions', { status: 429 });
    const busy = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m' }).expect(503);
    expect(busy.body.code).toBe('payment_provider_busy');
    expect(busy.headers['retry-after']).toBeDefined();
    fake.failPath('/v1/checkout/sessions', undefined);
    // The customer made on the first attempt is kept and used: one customer, however many attempts.
    const customer = await customerOf(orgId);
    fake.reset();
    await buy(owner, { organisation_id: orgId, pack: 'tokens_1m' }).expect(201);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/checkout/sessions']);
    expect(fake.requests[0].body).toMatchObject({ customer });
  });

  it("the provider refuses a recurring price in mode payment (its rule, in the double too): 500, nothing sold", async () => {
    const app = await startTestApp({
      databaseUrl: t.databaseUrl,
      env: { ...fakeProviderEnv(fake, 10_000), APP_URL: APP, TIERS_FILE: packsTiersFile(), PAYPROVIDER_PRICE_PACK_TOKENS_1M: 'price_5m_monthly' },
    });
    try {
      const orgId = (await createOrganisation(app)).id;
      const owner = await createUserWithSession(app, { org: orgId, role: 'owner' });
      fake.reset();
      await app.http().post('/api/billing/credits/checkout').set(owner.auth).send({ organisation_id: orgId, pack: 'tokens_1m' }).expect(500);
      const refused = fake.requests.find((r) => r.path === '/v1/checkout/sessions')!;
      expect(refused).toBeDefined();
      expect(fake.sessions.size).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('GET /api/billing/session reports a paid pack session with tier null, the pack and the quantity', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const member = await createUserWithSession(t, { org: orgId, role: 'member' });
    const session = fake.addCheckoutSession({
      mode: 'payment',
      payment_status: 'paid',
      status: 'complete',
      amount_total: 4000,
      currency: 'eur',
      created: 1763790000,
      client_reference_id: orgId,
      metadata: { organisation_id: orgId, pack: 'tokens_1m', quantity: '4', purpose: 'credit_pack' },
    });
    const res = await t.http().get('/api/billing/session').set(member.auth).query({ session_id: session.id }).expect(200);
    expect(res.body).toEqual({ session_id: session.id, amount_total: 4000, currency: 'EUR', tier: null, pack: 'tokens_1m', quantity: 4, created: 1763790000 });
    // A subscription's session keeps the seed's five fields.
    const sub = fake.addCheckoutSession({ payment_status: 'paid', status: 'complete', amount_total: 2900, currency: 'eur', metadata: { organisation_id: orgId, tier: 'pro' } });
    expect(Object.keys((await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: sub.id }).expect(200)).body).sort()).toEqual([
      'amount_total',
      'created',
      'currency',
      'session_id',
      'tier',
    ]);
    // An async payment still pending is not completed.
    const pending = fake.addCheckoutSession({ mode: 'payment', payment_status: 'unpaid', status: 'complete', metadata: { organisation_id: orgId, pack: 'tokens_1m', quantity: '1', purpose: 'credit_pack' } });
    expect((await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: pending.id }).expect(400)).body.code).toBe('payment_not_completed');
  });
});
