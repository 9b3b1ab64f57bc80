import { randomBytes } from 'node:crypto';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

type User = Awaited<ReturnType<typeof createUserWithSession>>;

/**
 * Issue #33 (2): provider requests are a shared budget. One member looping checkout-session lookups must not
 * spend the provider's rate limit for everyone: a per-user limit (PAYPROVIDER_USER_MAX_PER_MINUTE) answers 429
 * rate_limited with Retry-After, the provider budget (PAYPROVIDER_MAX_RPS, default 12 with a test key) keeps the
 * service under the provider's 25/s, and checkouts go before reads. Completed sessions are cached.
 */
describe('billing: the provider budget (PAYPROVIDER_MAX_RPS) and per-user limits', () => {
  const PER_USER = 10;
  let fake: FakeProvider;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro'] });
    t = await startTestApp({
      env: { ...fakeProviderEnv(fake, 2000), PAYPROVIDER_PRICE_PRO: 'price_pro', PAYPROVIDER_USER_MAX_PER_MINUTE: String(PER_USER) },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const memberOfNewOrg = async (role: 'owner' | 'member' = 'owner') => {
    const org = await createOrganisation(t, 'Budget');
    return { org: org.id, user: await createUserWithSession(t, { org: org.id, role }) };
  };
  const lookup = (user: User, sessionId: string) => t.http().get('/api/billing/session').query({ session_id: sessionId }).set(user.auth);
  const lookupsAtProvider = () => fake.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/checkout/sessions/'));

  it("a member's loops of random session ids get 429 with Retry-After; other organisations' checkouts all succeed", async () => {
    fake.rateLimit(25); // the provider's test-mode limit
    const abuser = (await memberOfNewOrg('member')).user;
    const buyers = await Promise.all(Array.from({ length: 5 }, () => memberOfNewOrg()));
    const answers: { status: number; code?: string; retryAfter?: string }[] = [];
    let started = 0;
    const loop = async () => {
      for (let i = 0; i < 15; i++) {
        const res = await lookup(abuser, `cs_test_${randomBytes(12).toString('hex')}`);
        started++;
        answers.push({ status: res.status, code: res.body.code, retryAfter: res.headers['retry-after'] });
      }
    };
    const loops = Array.from({ length: 4 }, loop);
    while (started < 4) await new Promise((r) => setImmediate(r));
    const checkouts = await Promise.all(
      buyers.map((b) => t.http().post('/api/billing/checkout').set(b.user.auth).send({ organisation_id: b.org, tier: 'pro' })),
    );
    await Promise.all(loops);

    expect(checkouts.map((res) => res.status)).toEqual([201, 201, 201, 201, 201]);
    // The abuser's first PER_USER lookups reached the provider (404: unknown ids); the rest were refused here.
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 404).length).toBeLessThanOrEqual(PER_USER + 1);
    expect(limited.length).toBeGreaterThanOrEqual(60 - PER_USER - 1);
    for (const a of limited) {
      expect(a.code).toBe('rate_limited');
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(lookupsAtProvider().length).toBeLessThanOrEqual(PER_USER + 1);
    expect(fake.rateLimited).toBe(0);
  });

  it('429 rate_limited in the shared shape with Retry-After on checkout and portal too; refused requests cost nothing', async () => {
    const { org, user } = await memberOfNewOrg();
    await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org, fake.addCustomer()]);
    // Refused before the provider (a malformed id): not counted.
    for (let i = 0; i < PER_USER + 5; i++) await lookup(user, 'not-a-session').expect(400);
    for (let i = 0; i < PER_USER; i++) await t.http().get('/api/billing/portal').set(user.auth).expect(200);
    const portal = await t.http().get('/api/billing/portal').set(user.auth).expect(429);
    expect(portal.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.any(String), code: 'rate_limited' });
    expect(Number(portal.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const checkout = await t.http().post('/api/billing/checkout').set(user.auth).send({ organisation_id: org, tier: 'pro' }).expect(429);
    expect(checkout.body.code).toBe('rate_limited');
    expect(fake.requests).toHaveLength(PER_USER);
  });

  it('a completed, paid session is asked of the provider once; an open one every time; access is checked each time', async () => {
    const { org, user } = await memberOfNewOrg('member');
    const stranger = (await memberOfNewOrg()).user;
    const meta = { client_reference_id: org, metadata: { organisation_id: org, tier: 'pro' } };
    const paid = fake.addCheckoutSession({ status: 'complete', payment_status: 'paid', amount_total: 2900, currency: 'eur', ...meta });
    const open = fake.addCheckoutSession({ status: 'open', payment_status: 'unpaid', ...meta });
    // Complete but unpaid (an asynchronous payment method): it may still become paid, so it is not kept.
    const pending = fake.addCheckoutSession({ status: 'complete', payment_status: 'unpaid', ...meta });

    const first = await lookup(user, paid.id).expect(200);
    const second = await lookup(user, paid.id).expect(200);
    expect(second.body).toEqual(first.body);
    await lookup(stranger, paid.id).expect(403);
    for (let i = 0; i < 2; i++) {
      await lookup(user, open.id).expect(400);
      await lookup(user, pending.id).expect(400);
    }
    expect(lookupsAtProvider().map((r) => r.path.split('/').pop())).toEqual([paid.id, open.id, pending.id, open.id, pending.id]);
  });
});
