import { randomUUID } from 'node:crypto';
import { FAKE_SECRET_KEY, FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const APP = 'https://app.example.com';

describe('POST /api/billing/checkout', () => {
  let fake: FakeProvider;
  let t: TestApp;
  let orgId: string;
  let owner: Awaited<ReturnType<typeof createUserWithSession>>;

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro', 'price_ent'] });
    // team is a paid tier with no price configured.
    t = await startTestApp({
      env: { ...fakeProviderEnv(fake, 10_000), APP_URL: APP, PAYPROVIDER_PRICE_PRO: 'price_pro', PAYPROVIDER_PRICE_ENTERPRISE: 'price_ent' },
    });
    orgId = (await createOrganisation(t)).id;
    owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const post = (user: { auth: Record<string, string> }, body: Record<string, unknown>) =>
    t.http().post('/api/billing/checkout').set(user.auth).send(body);

  it('creates a subscription checkout for the tier price, tagged with the organisation, with default return URLs', async () => {
    const res = await post(owner, { organisation_id: orgId, tier: 'pro' }).expect(201);
    expect(res.body).toEqual({ session_id: expect.stringMatching(/^cs_test_/), url: `${fake.url}/pay/${res.body.session_id}`, trial_days: 0 });

    expect(fake.requests).toHaveLength(1);
    const sent = fake.requests[0];
    expect(sent).toMatchObject({ method: 'POST', path: '/v1/checkout/sessions' });
    expect(sent.headers.authorization).toBe(`Bearer ${FAKE_SECRET_KEY}`);
    expect(sent.headers['idempotency-key']).toBeTruthy();
    expect(sent.body).toEqual({
      mode: 'subscription',
      line_items: [{ price: 'price_pro', quantity: '1' }],
      client_reference_id: orgId,
      metadata: { organisation_id: orgId, tier: 'pro' },
      subscription_data: { metadata: { organisation_id: orgId, tier: 'pro' } },
      success_url: `${APP}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${APP}/billing/cancel`,
    });
  });

  it("lets an admin buy, reusing the organisation's customer record and the given return URLs", async () => {
    const org = await createOrganisation(t, 'Has customer');
    await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org.id, fake.addCustomer('cus_existing1')]);
    const admin = await createUserWithSession(t, { org: org.id, role: 'admin' });
    const urls = { success_url: `${APP}/done?s={CHECKOUT_SESSION_ID}`, cancel_url: `${APP}/plans#top` };
    await post(admin, { organisation_id: org.id, tier: 'enterprise', ...urls }).expect(201);
    expect(fake.requests[0].body).toMatchObject({
      customer: 'cus_existing1',
      line_items: [{ price: 'price_ent', quantity: '1' }],
      metadata: { organisation_id: org.id, tier: 'enterprise' },
      ...urls,
    });
  });

  it('403 for a member, a stranger and a non-existent organisation; the provider is not called', async () => {
    const member = await createUserWithSession(t, { org: orgId, role: 'member' });
    const res = await post(member, { organisation_id: orgId, tier: 'pro' }).expect(403);
    expect(res.body.code).toBe('role_forbidden');

    const otherOrg = await createOrganisation(t, 'Other');
    const stranger = await createUserWithSession(t, { org: otherOrg.id, role: 'owner' });
    const a = await post(stranger, { organisation_id: orgId, tier: 'pro' }).expect(403);
    const b = await post(stranger, { organisation_id: randomUUID(), tier: 'pro' }).expect(403);
    expect(a.body).toEqual(b.body);
    expect(a.body.code).toBe('organisation_forbidden');
    expect(fake.requests).toEqual([]);
  });

  it('400 for free, unknown and prototype-named tiers; 400 tier_not_for_sale for a paid tier without a price', async () => {
    for (const tier of ['free', 'gold', 'PRO', '__proto__', 'constructor', '']) {
      const res = await post(owner, { organisation_id: orgId, tier }).expect(400);
      expect(res.body.code).toBe('invalid_tier');
    }
    const res = await post(owner, { organisation_id: orgId, tier: 'team' }).expect(400);
    expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.stringContaining('team'), code: 'tier_not_for_sale' });
    expect(fake.requests).toEqual([]);
  });

  it('400 validation_failed for malformed bodies: missing or mistyped fields, unknown fields', async () => {
    const bodies = [
      {},
      { tier: 'pro' },
      { organisation_id: 'not-a-uuid', tier: 'pro' },
      { organisation_id: orgId },
      { organisation_id: orgId, tier: 7 },
      { organisation_id: orgId, tier: 'pro', success_url: 42 },
      { organisation_id: orgId, tier: 'pro', price: 'price_cheap' },
      { organisation_id: orgId, tier: 'pro', customer: 'cus_someone_else' },
    ];
    for (const body of bodies) {
      const res = await post(owner, body).expect(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect(fake.requests).toEqual([]);
  });

  it('400 invalid_return_url for anything that leaves APP_URL (open redirects); the provider is not called', async () => {
    const attacks = [
      'https://evil.com/billing',
      '//evil.com/billing',
      '/billing/success',
      'javascript:alert(1)',
      'data:text/html,hi',
      `${APP}@evil.com/`,
      'https://user:pass@app.example.com/billing',
      'https://app.example.com.evil.com/',
      'https://app.example.com:8443/billing',
      'http://app.example.com/billing',
      'https://app.example.com\\@evil.com/',
      'https:/\\evil.com',
      'https://app.example.com/ok\nLocation: https://evil.com',
      ' https://app.example.com/billing',
      'https://evil.com/?next=https://app.example.com/',
    ];
    for (const url of attacks) {
      for (const field of ['success_url', 'cancel_url']) {
        const res = await post(owner, { organisation_id: orgId, tier: 'pro', [field]: url });
        expect({ url, field, status: res.status, code: res.body.code }).toEqual({
          url,
          field,
          status: 400,
          code: 'invalid_return_url',
        });
      }
    }
    expect(fake.requests).toEqual([]);
  });

  it('401 without a session', async () => {
    await t.http().post('/api/billing/checkout').send({ organisation_id: orgId, tier: 'pro' }).expect(401);
    expect(fake.requests).toEqual([]);
  });
});
