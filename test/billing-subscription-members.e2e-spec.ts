import { FakeProvider } from './support/fake-provider';
import { cli } from './support/run-cli';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'members-webapp-key-0123456789';

/**
 * A downgrade takes effect at the period's end, when the provider makes it and nothing can refuse it any more
 * (spec §11.4): from the moment it is asked for until then, members are added only within the users limit it
 * will put in force, on every path that adds members (the provisioning API, the CLI), also while the change is
 * still being made and when additions race it.
 */
describe('billing: a pending seat reduction caps member additions', () => {
  let fake: FakeProvider;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    t = await startSubscriptionApp(fake, { env: { SERVICE_API_KEYS: `webapp:${KEY}` } });
  });
  afterAll(async () => {
    fake.release();
    await t.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
  });

  const admin = () => ({
    put: (path: string) => t.http().put(`/api/admin${path}`).set('X-Service-Key', KEY),
    post: (path: string) => t.http().post(`/api/admin${path}`).set('X-Service-Key', KEY),
  });
  const newUser = async () => (await admin().post('/users').send({ email: `m-${Math.random().toString(36).slice(2)}@example.com` }).expect(201)).body.id as string;
  const addMember = async (orgId: string, status: number) =>
    admin().put(`/organisations/${orgId}/members/${await newUser()}`).send({ role: 'member' }).expect(status);
  const members = async (orgId: string) => Number((await t.db.query(`SELECT count(*) AS n FROM memberships WHERE organisation_id = $1`, [orgId]))[0].n);
  const change = (s: { owner: { auth: Record<string, string> }; org: { id: string } }, body: object) =>
    t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, ...body });

  it('10 seats, 3 members, 5 seats from the period end: 2 more are added, the next one is refused (409 pending_change_limit) on the API and the CLI', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 10, members: 3 });
    await change(s, { seats: 5 }).expect(200);
    await addMember(s.org.id, 200);
    await addMember(s.org.id, 200);
    const refused = await addMember(s.org.id, 409);
    expect(refused.body).toEqual({ statusCode: 409, error: 'Conflict', code: 'pending_change_limit', message: expect.any(String) });
    const day = new Date(s.periodEnd * 1000).toISOString().slice(0, 10);
    expect(refused.body.message).toContain(`to team with 5 seats, from ${day}`);
    expect(refused.body.message).toContain('allows 5 users');

    const user = await newUser();
    const viaCli = await cli(['member:add', '--org', s.org.id, '--user', user], { DATABASE_URL: t.databaseUrl }, { app: t.app });
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain('allows 5 users');
    expect(await members(s.org.id)).toBe(5);
    // The users limit in force is still the 10 seats paid for now.
    const status = await t.http().get('/api/licensing/status').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(200);
    expect(status.body.usage.users).toEqual({ used: 5, limit: 10, at_capacity: false });

    // Releasing the pending change lifts the cap; a role change never needs a seat.
    await t.http().delete('/api/billing/subscription/pending-change').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(204);
    await admin().put(`/organisations/${s.org.id}/members/${user}`).send({ role: 'member' }).expect(200);
    expect(await members(s.org.id)).toBe(6);
  });

  it('the cap is the lower users limit of a pending tier too; a downgrade to a tier allowing fewer users than members is refused', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 12, members: 9 });
    // pro allows 10 users (spec §11.1's example table), whatever the seats.
    await change(s, { tier: 'pro' }).expect(200);
    await addMember(s.org.id, 200);
    expect((await addMember(s.org.id, 409)).body.message).toContain('to pro, from');

    const crowded = await subscribed(t, fake, { price: 'team_month', seats: 12, members: 11 });
    const res = await change(crowded, { tier: 'pro' }).expect(409);
    expect(res.body.code).toBe('seats_below_members');
    expect(res.body.message).toContain('allows 10 users');
    expect(fake.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('while the change is being made at the provider, additions are already held to it', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 10, members: 3 });
    fake.hold('/v1/subscription_schedules', { method: 'POST' });
    const pending = change(s, { seats: 3 }).then((r) => r);
    try {
      await waitFor('the schedule asked of the provider', () => fake.held() > 0 || undefined);
      const refused = await addMember(s.org.id, 409);
      expect(refused.body.code).toBe('pending_change_limit');
      expect(refused.body.message).toContain('being made at the payment provider');
    } finally {
      fake.release();
    }
    expect((await pending).status).toBe(200);
    expect(await members(s.org.id)).toBe(3);
    expect((await addMember(s.org.id, 409)).body.code).toBe('pending_change_limit');
  });

  it('a downgrade racing additions: either the downgrade is refused, or the members fit its seats', async () => {
    for (let round = 0; round < 3; round++) {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 10, members: 3 });
      const users = await Promise.all(Array.from({ length: 4 }, newUser));
      const [downgrade, ...additions] = await Promise.all([
        change(s, { seats: 4 }),
        ...users.map((u) => admin().put(`/organisations/${s.org.id}/members/${u}`).send({ role: 'member' })),
      ]);
      const added = additions.filter((r) => r.status === 200).length;
      expect(additions.every((r) => r.status === 200 || (r.status === 409 && r.body.code === 'pending_change_limit'))).toBe(true);
      if (downgrade.status === 200) {
        expect(downgrade.body.subscription.pending_change).toMatchObject({ seats: 4 });
        expect(3 + added).toBeLessThanOrEqual(4);
      } else {
        expect(downgrade.body.code).toBe('seats_below_members');
        expect(3 + added).toBeGreaterThan(4);
      }
      expect(await members(s.org.id)).toBe(3 + added);
    }
  });
});
