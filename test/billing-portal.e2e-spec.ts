import { randomUUID } from 'node:crypto';
import { FAKE_SECRET_KEY, FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const APP = 'https://app.example.com';

describe('GET /api/billing/portal', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    fake = await startFakeProvider();
    t = await startTestApp({ env: { ...fakeProviderEnv(fake, 10_000), APP_URL: APP }, logLines });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  /** An organisation whose customer record the provider knows (unless `known` is false). */
  const customerOrg = async (customerId = `cus_${randomUUID().slice(0, 8)}`, known = true) => {
    if (known) fake.addCustomer(customerId);
    const org = await createOrganisation(t);
    await t.db.query(`UPDATE organisations SET provider_customer_id = $1 WHERE id = $2`, [customerId, org.id]);
    return { id: org.id, customerId };
  };
  const get = (user: { auth: Record<string, string> }, query: Record<string, string> = {}) =>
    t.http().get('/api/billing/portal').query(query).set(user.auth);

  it("infers the caller's only organisation and opens a portal session for its customer, returning to APP_URL", async () => {
    const org = await customerOrg();
    const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
    const res = await get(owner).expect(200);
    expect(res.body).toEqual({ url: expect.stringMatching(new RegExp(`^${fake.url}/portal/bps_`)) });

    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/billing_portal/sessions',
      body: { customer: org.customerId, return_url: `${APP}/billing` },
    });
    expect(fake.requests[0].headers.authorization).toBe(`Bearer ${FAKE_SECRET_KEY}`);
  });

  it('lets an admin in, and refuses a member with 403 role_forbidden', async () => {
    const org = await customerOrg();
    const admin = await createUserWithSession(t, { org: org.id, role: 'admin' });
    await get(admin).expect(200);
    const member = await createUserWithSession(t, { org: org.id, role: 'member' });
    const res = await get(member).expect(403);
    expect(res.body.code).toBe('role_forbidden');
    const named = await get(member, { organisation_id: org.id }).expect(403);
    expect(named.body.code).toBe('role_forbidden');
    expect(fake.requests).toHaveLength(1);
  });

  it('needs organisation_id when the caller belongs to several organisations, or to none', async () => {
    const first = await customerOrg();
    const second = await customerOrg();
    const owner = await createUserWithSession(t, { org: first.id, role: 'owner' });
    await t.db.query(`INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, 'admin')`, [second.id, owner.id]);

    const res = await get(owner).expect(400);
    expect(res.body.code).toBe('organisation_id_required');
    const lonely = await createUserWithSession(t);
    expect((await get(lonely).expect(400)).body.code).toBe('organisation_id_required');
    expect(fake.requests).toEqual([]);

    await get(owner, { organisation_id: second.id }).expect(200);
    expect(fake.requests[0].body).toMatchObject({ customer: second.customerId });
  });

  it('404 no_customer while the organisation has no customer record; the provider is not called', async () => {
    const org = await createOrganisation(t);
    const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
    const res = await get(owner).expect(404);
    expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: expect.any(String), code: 'no_customer' });
    expect(fake.requests).toEqual([]);
  });

  it('404 no_customer, with a warning in the log, when the provider no longer knows the customer', async () => {
    // Deleted at the provider, or a test-mode id after switching to a live key: the provider answers 400 resource_missing.
    const org = await customerOrg('cus_deleted_at_provider', false);
    const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
    const res = await get(owner).expect(404);
    expect(res.body.code).toBe('no_customer');
    expect(res.body.message).not.toContain('cus_deleted_at_provider');
    expect(fake.requests).toHaveLength(1);
    const warning = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'the payment provider does not know the stored customer');
    expect(warning).toMatchObject({ level: 40, organisationId: org.id, customerId: 'cus_deleted_at_provider' });
  });

  it('403 with one body for a stranger and a non-existent organisation; 400 for a malformed id or unknown parameter', async () => {
    const org = await customerOrg();
    const stranger = await createUserWithSession(t, { org: (await customerOrg()).id, role: 'owner' });
    const a = await get(stranger, { organisation_id: org.id }).expect(403);
    const b = await get(stranger, { organisation_id: randomUUID() }).expect(403);
    expect(a.body).toEqual(b.body);
    expect(a.body.code).toBe('organisation_forbidden');
    expect((await get(stranger, { organisation_id: 'nope' }).expect(400)).body.code).toBe('validation_failed');
    expect((await get(stranger, { customer: 'cus_x' }).expect(400)).body.code).toBe('validation_failed');
    expect(fake.requests).toEqual([]);
  });

  it('401 without a session', async () => {
    await t.http().get('/api/billing/portal').expect(401);
    expect(fake.requests).toEqual([]);
  });
});
