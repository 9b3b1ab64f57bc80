import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { providerId, subscriptionEvent, subscriptionObject, SubscriptionOptions } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'seats-test-key';

function tiersFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'seats-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
  return file;
}

describe('webhook events: seats, interval, cancellation at period end, trial end (spec §11.5)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { TIERS_FILE: tiersFile(), SERVICE_API_KEYS: KEY } });
  });
  afterAll(() => t.close());

  const send = (event: object) => deliver(t.app.getHttpServer(), event).expect(200);
  const stored = async (subscriptionId: string) => {
    const [row] = await t.db.query(
      `SELECT seats, interval, cancel_at_period_end, trial_end, schedule_id, pending_change FROM provider_subscriptions
       WHERE subscription_id = $1`,
      [subscriptionId],
    );
    return row;
  };
  // The status read (a member's) and the check (a trusted back-end's) agree on the users limit in force.
  const usersLimit = async (orgId: string) => {
    const check = await t.http().get('/api/licensing/check').query({ organisation_id: orgId, metric: 'users', amount: 1 }).set('X-Service-Key', KEY);
    const member = members.get(orgId)!;
    const status = await t.http().get('/api/licensing/status').query({ organisation_id: orgId }).set(member.auth).expect(200);
    expect(check.body.limit).toBe(status.body.usage.users.limit);
    return check.body.limit;
  };
  const members = new Map<string, { auth: Record<string, string> }>();
  const addMember = async (orgId: string) => {
    const user = await createUserWithSession(t);
    return t.http().put(`/api/admin/organisations/${orgId}/members/${user.id}`).set('X-Service-Key', KEY).send({ role: 'member' });
  };
  const subscribe = async (o: SubscriptionOptions & { created?: number }) => {
    const org = (await createOrganisation(t)).id;
    members.set(org, await createUserWithSession(t, { org, role: 'owner' }));
    const sub = subscriptionObject({ organisationId: org, tier: 'team', ...o });
    expect((await send(subscriptionEvent('created', sub, { created: o.created ?? 1_790_000_000 }))).body.status).toBe('processed');
    return { org, sub };
  };

  it('keeps the item quantity, the price interval, cancel_at_period_end and trial_end from subscription events', async () => {
    const { org, sub } = await subscribe({ quantity: 7, interval: 'year', status: 'trialing', trialEnd: 1_791_000_000 });
    expect(await stored(sub.id)).toEqual({
      seats: 7,
      interval: 'year',
      cancel_at_period_end: false,
      trial_end: 1_791_000_000,
      schedule_id: null,
      pending_change: null,
    });

    const updated = subscriptionObject({ id: sub.id, customer: sub.customer, organisationId: org, tier: 'team', quantity: 9, cancelAtPeriodEnd: true });
    await send(subscriptionEvent('updated', updated, { created: 1_790_000_010 }));
    expect(await stored(sub.id)).toMatchObject({ seats: 9, interval: 'month', cancel_at_period_end: true, trial_end: null });
  });

  it("a per-seat tier's users limit in force is the subscription's seats, at most the tier's max; member additions past it are refused", async () => {
    const { org, sub } = await subscribe({ quantity: 2 });
    expect(await usersLimit(org)).toBe(2);
    expect((await addMember(org)).status).toBe(200);
    const refused = await addMember(org);
    expect(refused.status).toBe(402);
    expect(refused.body.code).toBe('limit_exceeded');
    expect(refused.body.message).toContain('the limit of 2 in force');

    const more = subscriptionObject({ id: sub.id, customer: sub.customer, organisationId: org, tier: 'team', quantity: 3 });
    await send(subscriptionEvent('updated', more, { created: 1_790_000_010 }));
    expect(await usersLimit(org)).toBe(3);
    expect((await addMember(org)).status).toBe(200);
    expect((await addMember(org)).status).toBe(402);

    const beyondMax = subscriptionObject({ id: sub.id, customer: sub.customer, organisationId: org, tier: 'team', quantity: 900 });
    await send(subscriptionEvent('updated', beyondMax, { created: 1_790_000_020 }));
    expect(await usersLimit(org)).toBe(500);
  });

  it('an older event changes no seats (stale)', async () => {
    const { org, sub } = await subscribe({ quantity: 4, created: 1_790_000_100 });
    const older = subscriptionObject({ id: sub.id, customer: sub.customer, organisationId: org, tier: 'team', quantity: 40, cancelAtPeriodEnd: true });
    const res = await send(subscriptionEvent('updated', older, { created: 1_790_000_050 }));
    expect(res.body.status).toBe('stale');
    expect(await stored(sub.id)).toMatchObject({ seats: 4, cancel_at_period_end: false });
    expect(await usersLimit(org)).toBe(4);
  });

  it("a tier not sold per seat keeps its users limit whatever the quantity; a license not active has the free tier's", async () => {
    const { org, sub } = await subscribe({ tier: 'pro', quantity: 40 });
    expect(await stored(sub.id)).toMatchObject({ seats: 40 });
    expect(await usersLimit(org)).toBe(10);

    const seated = await subscribe({ quantity: 40, status: 'unpaid' });
    expect(await usersLimit(seated.org)).toBe(3);
  });

  it('a quantity of the wrong type is stored failed and changes nothing', async () => {
    const { org, sub } = await subscribe({ quantity: 5 });
    const bad = subscriptionObject({ id: sub.id, customer: sub.customer, organisationId: org, tier: 'team' });
    bad.items.data[0].quantity = '50';
    const res = await send(subscriptionEvent('updated', bad, { created: 1_790_000_010, id: providerId('evt') }));
    expect(res.body.status).toBe('failed');
    expect(res.body.reason).toContain('quantity');
    expect(await usersLimit(org)).toBe(5);
  });
});
