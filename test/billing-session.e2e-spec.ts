import { randomUUID } from 'node:crypto';
import { FAKE_SECRET_KEY, FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

describe('GET /api/billing/session', () => {
  let fake: FakeProvider;
  let t: TestApp;
  let orgId: string;
  let owner: Awaited<ReturnType<typeof createUserWithSession>>;

  beforeAll(async () => {
    fake = await startFakeProvider();
    t = await startTestApp({ env: fakeProviderEnv(fake, 10_000) });
    orgId = (await createOrganisation(t)).id;
    owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const get = (user: { auth: Record<string, string> }, sessionId?: string) =>
    t.http().get('/api/billing/session').query(sessionId === undefined ? {} : { session_id: sessionId }).set(user.auth);

  const paidSession = (overrides: Record<string, unknown> = {}) =>
    fake.addCheckoutSession({
      payment_status: 'paid',
      status: 'complete',
      amount_total: 2900,
      currency: 'eur',
      created: 1763790000,
      client_reference_id: orgId,
      metadata: { organisation_id: orgId, tier: 'pro' },
      ...overrides,
    });

  it('reports a paid session to each member of its organisation, exactly in the seed shape', async () => {
    const session = paidSession();
    const admin = await createUserWithSession(t, { org: orgId, role: 'admin' });
    const member = await createUserWithSession(t, { org: orgId, role: 'member' });
    for (const user of [owner, admin, member]) {
      const res = await get(user, session.id).expect(200);
      expect(res.body).toEqual({ session_id: session.id, amount_total: 2900, currency: 'EUR', tier: 'pro', created: 1763790000 });
    }
    // A completed, paid session does not change: asked of the provider once, then kept.
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: `/v1/checkout/sessions/${session.id}` });
    expect(fake.requests[0].headers.authorization).toBe(`Bearer ${FAKE_SECRET_KEY}`);
  });

  it('accepts no_payment_required, and a session naming its organisation only by client_reference_id', async () => {
    const free = paidSession({ payment_status: 'no_payment_required', amount_total: 0, metadata: { tier: 'team' } });
    const res = await get(owner, free.id).expect(200);
    expect(res.body).toMatchObject({ amount_total: 0, currency: 'EUR', tier: 'team' });
  });

  it('400 session_id_required when session_id is missing or empty; the provider is not called', async () => {
    for (const id of [undefined, '']) {
      const res = await get(owner, id).expect(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.any(String), code: 'session_id_required' });
    }
    expect(fake.requests).toEqual([]);
  });

  it('400 for ids that do not match ^cs_[A-Za-z0-9_]{1,250}$; none reaches the provider', async () => {
    const bad = ['../customers/cus_1', 'cus_123', 'cs_', 'cs_abc-def', 'cs_a/b', 'cs_a%2F..', 'cs_a b', 'CS_abc', ` cs_abc`,
      `cs_${'a'.repeat(251)}`, 'cs_abc\n'];
    for (const id of bad) {
      const res = await get(owner, id).expect(400);
      expect(res.body.code).toBe('invalid_session_id');
    }
    const twice = await t.http().get('/api/billing/session?session_id=cs_a&session_id=cs_b').set(owner.auth).expect(400);
    expect(twice.body.code).toBe('invalid_session_id');
    expect(fake.requests).toEqual([]);
  });

  it("accepts an id as long as the provider's (66 characters); a longer one is 404 session_not_found, the provider not asked", async () => {
    const session = paidSession({ id: `cs_test_${'a'.repeat(58)}` });
    expect(session.id).toHaveLength(66);
    await get(owner, session.id).expect(200);
    fake.reset();
    // Well-formed (400 would say otherwise), but longer than the provider takes on this path: it would refuse it.
    for (const id of [`${session.id}b`, `cs_${'a'.repeat(250)}`]) {
      const res = await get(owner, id).expect(404);
      expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: expect.any(String), code: 'session_not_found' });
    }
    expect(fake.requests).toEqual([]);
  });

  it('400 payment_not_completed for an unpaid session', async () => {
    const session = paidSession({ payment_status: 'unpaid', status: 'open' });
    const res = await get(owner, session.id).expect(400);
    expect(res.body.code).toBe('payment_not_completed');
  });

  it('404 session_not_found for an id the provider does not know', async () => {
    const res = await get(owner, 'cs_test_unknown').expect(404);
    expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: expect.any(String), code: 'session_not_found' });
    expect(fake.requests).toHaveLength(1);
  });

  it('403 with one body for a stranger, a missing organisation, a session with no or a malformed organisation', async () => {
    const otherOrg = await createOrganisation(t, 'Other');
    const stranger = await createUserWithSession(t, { org: otherOrg.id, role: 'owner' });
    const cases: [{ auth: Record<string, string> }, Record<string, unknown>][] = [
      [stranger, {}],
      // Access is checked before payment state: a stranger cannot learn that it is unpaid.
      [stranger, { payment_status: 'unpaid' }],
      [owner, { client_reference_id: null, metadata: { organisation_id: randomUUID(), tier: 'pro' } }],
      [owner, { client_reference_id: null, metadata: { tier: 'pro' } }],
      [owner, { client_reference_id: null, metadata: { organisation_id: "x' OR 1=1 --", tier: 'pro' } }],
    ];
    const bodies = [];
    for (const [user, overrides] of cases) {
      const res = await get(user, paidSession(overrides).id).expect(403);
      bodies.push(res.body);
    }
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
    expect(bodies[0]).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.any(String), code: 'organisation_forbidden' });
  });

  it('401 without a session, and the provider is not called', async () => {
    const session = paidSession();
    const res = await t.http().get('/api/billing/session').query({ session_id: session.id }).expect(401);
    expect(res.body.code).toBe('unauthenticated');
    expect(fake.requests).toEqual([]);
  });
});
