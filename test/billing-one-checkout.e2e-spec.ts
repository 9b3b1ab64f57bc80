import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

type User = Awaited<ReturnType<typeof createUserWithSession>>;

/**
 * Issue #33 (5): one payable checkout session per organisation. The same plan again answers the open session
 * (200); another plan expires it at the provider first (201); two tabs on two instances at the same moment get
 * one session between them.
 */
describe('billing: one open checkout per organisation', () => {
  let fake: FakeProvider;
  let t: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro', 'price_ent'] });
    const env = { ...fakeProviderEnv(fake, 2000), PAYPROVIDER_PRICE_PRO: 'price_pro', PAYPROVIDER_PRICE_ENTERPRISE: 'price_ent' };
    t = await startTestApp({ env });
    // A second instance on the same database: no in-process lock can keep the two apart.
    other = await startTestApp({ env, databaseUrl: t.databaseUrl });
  });
  afterAll(async () => {
    await other.close();
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const newOrg = async () => {
    const org = (await createOrganisation(t, 'One checkout')).id;
    return { org, owner: await createUserWithSession(t, { org, role: 'owner' }) };
  };
  const checkout = (app: TestApp, user: User, org: string, tier: string) =>
    app.http().post('/api/billing/checkout').set(user.auth).send({ organisation_id: org, tier });
  const calls = () => fake.requests.map((r) => `${r.method} ${r.path.replace(/cs_test_\w+/, '{id}')}`);

  it('the same plan again answers the open session (200, same session_id and url) after checking it is still open', async () => {
    const { org, owner } = await newOrg();
    const first = await checkout(t, owner, org, 'pro').expect(201);
    const again = await checkout(t, owner, org, 'pro').expect(200);
    expect(again.body).toEqual(first.body);
    expect(calls()).toEqual(['POST /v1/checkout/sessions', 'GET /v1/checkout/sessions/{id}']);
  });

  it('two checkouts at the same moment on two instances: one session between them, created once', async () => {
    const { org, owner } = await newOrg();
    const admin = await createUserWithSession(t, { org, role: 'admin' });
    const [a, b] = await Promise.all([checkout(t, owner, org, 'pro'), checkout(other, admin, org, 'pro')]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
    expect(a.body.session_id).toBe(b.body.session_id);
    expect(a.body.url).toBe(b.body.url);
    expect(calls().filter((c) => c === 'POST /v1/checkout/sessions')).toHaveLength(1);
    expect([...fake.sessions.values()].filter((s) => s.status === 'open')).toHaveLength(1);
  });

  it('another tier expires the open session at the provider before opening its own; only one stays payable', async () => {
    const { org, owner } = await newOrg();
    const pro = await checkout(t, owner, org, 'pro').expect(201);
    const ent = await checkout(t, owner, org, 'enterprise').expect(201);
    expect(ent.body.session_id).not.toBe(pro.body.session_id);
    expect(fake.requests[1]).toMatchObject({ method: 'POST', path: `/v1/checkout/sessions/${pro.body.session_id}/expire`, body: {} });
    expect(calls()).toEqual(['POST /v1/checkout/sessions', 'POST /v1/checkout/sessions/{id}/expire', 'POST /v1/checkout/sessions']);
    expect(fake.sessions.get(pro.body.session_id)!.status).toBe('expired');
    expect(fake.sessions.get(ent.body.session_id)!.status).toBe('open');
    // And back to enterprise's session, not a third one.
    const again = await checkout(t, owner, org, 'enterprise').expect(200);
    expect(again.body.session_id).toBe(ent.body.session_id);
  });

  it('a session that expired at the provider is replaced by a new one', async () => {
    const { org, owner } = await newOrg();
    const first = await checkout(t, owner, org, 'pro').expect(201);
    fake.sessions.get(first.body.session_id)!.status = 'expired';
    const second = await checkout(t, owner, org, 'pro').expect(201);
    expect(second.body.session_id).not.toBe(first.body.session_id);
  });

  it('a session paid a moment ago (its subscription not recorded yet) stops a new checkout: 409, nothing created', async () => {
    const { org, owner } = await newOrg();
    const first = await checkout(t, owner, org, 'pro').expect(201);
    Object.assign(fake.sessions.get(first.body.session_id)!, { status: 'complete', payment_status: 'paid', subscription: 'sub_just_paid' });
    for (const tier of ['pro', 'enterprise']) {
      const res = await checkout(t, owner, org, tier).expect(409);
      expect(res.body.code).toBe('subscription_exists');
    }
    expect(calls().filter((c) => c === 'POST /v1/checkout/sessions')).toHaveLength(1);
  });

  it('a provider failure while opening leaves no claim behind: the next checkout works', async () => {
    const { org, owner } = await newOrg();
    fake.failNext(3, { status: 500 });
    await checkout(t, owner, org, 'pro').expect(500);
    await checkout(t, owner, org, 'pro').expect(201);
  });
});

describe('billing: one open checkout per organisation, sandbox provider', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { PAYPROVIDER_SECRET_KEY: undefined } });
  });
  afterAll(() => t.close());

  it('another tier expires the sandbox session: its page answers 410 and it cannot be paid', async () => {
    const org = (await createOrganisation(t, 'Sandbox one checkout')).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    const post = (tier: string) => t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier });
    const pro = await post('pro').expect(201);
    expect((await post('pro').expect(200)).body).toEqual(pro.body);
    const ent = await post('enterprise').expect(201);
    expect(ent.body.session_id).not.toBe(pro.body.session_id);
    const page = (id: string) => t.http().get(`/sandbox/checkout/${id}`);
    await page(pro.body.session_id).expect(410);
    await t.http().post(`/sandbox/checkout/${pro.body.session_id}/pay`).expect(410);
    await page(ent.body.session_id).expect(200);
  });
});
