import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { providerEvent, providerId, subscriptionEvent, subscriptionObject, SubscriptionOptions } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
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

const PRICE_TEAM_MONTH = 'price_sched_team_month';
const PRICE_TEAM_YEAR = 'price_sched_team_year';
const PRICE_PRO = 'price_sched_pro';
const nowS = () => Math.floor(Date.now() / 1000);

/** A subscription schedule as the provider sends it: its current phase until `periodEnd`, then `next`. */
function scheduleObject(o: {
  id?: string;
  subscription: string;
  customer: string;
  periodStart: number;
  periodEnd: number;
  next?: { price: string | Record<string, unknown>; quantity: number };
  status?: string;
}) {
  const current = { start_date: o.periodStart, end_date: o.periodEnd, items: [{ price: PRICE_TEAM_MONTH, quantity: 5 }], metadata: {} };
  const phases: Record<string, unknown>[] = [current];
  if (o.next) phases.push({ start_date: o.periodEnd, end_date: o.periodEnd + 30 * 86_400, items: [o.next], metadata: {} });
  return {
    id: o.id ?? providerId('sub_sched'),
    object: 'subscription_schedule',
    customer: o.customer,
    subscription: o.subscription,
    status: o.status ?? 'active',
    end_behavior: 'release',
    current_phase: { start_date: o.periodStart, end_date: o.periodEnd },
    phases,
    metadata: {},
    released_at: null,
    released_subscription: null,
  };
}

describe('webhook events: subscription schedules, trial_will_end and license.updated (spec §11.5)', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let fake: FakeProvider;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startFakeProvider();
    fake.addPrice(PRICE_TEAM_MONTH);
    fake.addPrice(PRICE_TEAM_YEAR, { recurring: { ...fake.prices.get(PRICE_TEAM_MONTH)!.recurring, interval: 'year' } });
    fake.addPrice(PRICE_PRO);
    t = await startTestApp({
      env: {
        ...fakeProviderEnv(fake),
        TIERS_FILE: tiersFile(),
        PAYPROVIDER_PRICE_TEAM: `${PRICE_TEAM_MONTH},${PRICE_TEAM_YEAR}`,
        PAYPROVIDER_PRICE_PRO: PRICE_PRO,
        NOTIFY_URLS: receiver.url,
        NOTIFY_SECRET: secret,
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await receiver.close();
  });

  const send = async (event: object) => (await deliver(t.app.getHttpServer(), event).expect(200)).body;
  const pending = async (subscriptionId: string) =>
    (await t.db.query(`SELECT schedule_id, pending_change FROM provider_subscriptions WHERE subscription_id = $1`, [subscriptionId]))[0];
  const outbox = async (org: string) =>
    (await t.db.query(`SELECT type, version, body FROM notification_messages WHERE organisation_id = $1 ORDER BY version`, [org])).map(
      (m: { type: string; body: string }) => ({ type: m.type, data: JSON.parse(m.body).data }),
    );
  const periodStart = nowS() - 86_400;
  const periodEnd = periodStart + 30 * 86_400;
  const teamSubscription = async (extra: SubscriptionOptions = {}) => {
    const org = (await createOrganisation(t)).id;
    const o = { organisationId: org, tierSource: 'none' as const, price: PRICE_TEAM_MONTH, quantity: 5, periodStart, periodEnd, ...extra };
    const sub = subscriptionObject(o);
    expect((await send(subscriptionEvent('created', sub, { created: nowS() - 100 }))).status).toBe('processed');
    return { org, sub, o };
  };

  it('subscription_schedule.updated keeps the pending change of its next phase; an older one is stale; .released ends it', async () => {
    const { sub } = await teamSubscription();
    const schedule = scheduleObject({ subscription: sub.id, customer: sub.customer, periodStart, periodEnd, next: { price: PRICE_TEAM_YEAR, quantity: 3 } });
    expect((await send(providerEvent('subscription_schedule.updated', schedule, { created: nowS() - 50 }))).status).toBe('processed');
    expect(await pending(sub.id)).toEqual({
      schedule_id: schedule.id,
      pending_change: { tier: 'team', interval: 'year', seats: 3, effective_at: periodEnd },
    });

    // An older update (its next phase then was 2 seats, monthly) arriving late changes nothing.
    const older = scheduleObject({ id: schedule.id, subscription: sub.id, customer: sub.customer, periodStart, periodEnd, next: { price: PRICE_TEAM_MONTH, quantity: 2 } });
    const stale = await send(providerEvent('subscription_schedule.updated', older, { created: nowS() - 60 }));
    expect(stale.status).toBe('stale');
    expect((await pending(sub.id)).pending_change.seats).toBe(3);

    // A schedule whose next phase is a pro price given as an expanded object: tier and interval from it.
    const toPro = scheduleObject({ id: schedule.id, subscription: sub.id, customer: sub.customer, periodStart, periodEnd, next: { price: { id: PRICE_PRO, object: 'price', recurring: { interval: 'month' } }, quantity: 1 } });
    await send(providerEvent('subscription_schedule.updated', toPro, { created: nowS() - 40 }));
    expect((await pending(sub.id)).pending_change).toEqual({ tier: 'pro', interval: 'month', seats: 1, effective_at: periodEnd });

    const released = { ...toPro, status: 'released', released_subscription: sub.id, subscription: sub.id };
    const releasedAt = nowS() - 30;
    expect((await send(providerEvent('subscription_schedule.released', released, { created: releasedAt }))).status).toBe('processed');
    expect(await pending(sub.id)).toEqual({ schedule_id: null, pending_change: null });
    // An update of the same second as the release comes before it (updated < released): stale.
    expect((await send(providerEvent('subscription_schedule.updated', schedule, { created: releasedAt }))).status).toBe('stale');
    expect(await pending(sub.id)).toEqual({ schedule_id: null, pending_change: null });
  });

  it("an ended schedule clears only itself; a subscription event saying it has no schedule clears the pending change", async () => {
    const { sub, o } = await teamSubscription();
    const current = scheduleObject({ subscription: sub.id, customer: sub.customer, periodStart, periodEnd, next: { price: PRICE_TEAM_MONTH, quantity: 2 } });
    await send(providerEvent('subscription_schedule.updated', current, { created: nowS() - 50 }));
    const old = scheduleObject({ subscription: sub.id, customer: sub.customer, periodStart, periodEnd, status: 'canceled' });
    expect((await send(providerEvent('subscription_schedule.canceled', old, { created: nowS() - 40 }))).status).toBe('processed');
    expect((await pending(sub.id)).schedule_id).toBe(current.id);

    // The subscription with the schedule attached keeps the pending change.
    await send(subscriptionEvent('updated', subscriptionObject({ ...o, id: sub.id, customer: sub.customer, schedule: current.id }), { created: nowS() - 35 }));
    expect((await pending(sub.id)).pending_change).toMatchObject({ seats: 2 });
    // A schedule event newer than the subscription event below: that event's "no schedule" is older news.
    await send(providerEvent('subscription_schedule.updated', current, { created: nowS() - 30 }));
    await send(subscriptionEvent('updated', subscriptionObject({ ...o, id: sub.id, customer: sub.customer, schedule: null }), { created: nowS() - 32 }));
    expect(await pending(sub.id)).toMatchObject({ schedule_id: current.id, pending_change: { seats: 2 } });
    // A newer one saying it has no schedule ends the pending change.
    await send(subscriptionEvent('updated', subscriptionObject({ ...o, id: sub.id, customer: sub.customer, schedule: null }), { created: nowS() - 20 }));
    expect(await pending(sub.id)).toEqual({ schedule_id: null, pending_change: null });
  });

  it('a schedule of a subscription not known yet waits (unmatched) and is applied when its subscription arrives; one of no organisation is ignored', async () => {
    const { org, sub } = await teamSubscription();
    const laterId = providerId('sub');
    const schedule = scheduleObject({ subscription: laterId, customer: sub.customer, periodStart, periodEnd, next: { price: PRICE_TEAM_MONTH, quantity: 4 } });
    expect((await send(providerEvent('subscription_schedule.updated', schedule, { created: nowS() - 20 }))).status).toBe('unmatched');
    const later = subscriptionObject({ id: laterId, customer: sub.customer, organisationId: org, tierSource: 'none', price: PRICE_TEAM_MONTH, quantity: 5, periodStart, periodEnd, schedule: schedule.id });
    await send(subscriptionEvent('created', later, { created: nowS() - 30 }));
    expect(await pending(laterId)).toEqual({ schedule_id: schedule.id, pending_change: { tier: 'team', interval: 'month', seats: 4, effective_at: periodEnd } });

    const foreign = scheduleObject({ subscription: providerId('sub'), customer: providerId('cus'), periodStart, periodEnd });
    expect((await send(providerEvent('subscription_schedule.updated', foreign))).status).toBe('ignored');
  });

  it('customer.subscription.trial_will_end → a trial.ending notification; none for a deleted subscription', async () => {
    const trialEnd = nowS() + 3 * 86_400;
    const { org, sub, o } = await teamSubscription({ status: 'trialing', trialEnd });
    const willEnd = subscriptionObject({ ...o, id: sub.id, customer: sub.customer, status: 'trialing', trialEnd, defaultPaymentMethod: 'pm_card_visa' });
    expect((await send(providerEvent('customer.subscription.trial_will_end', willEnd))).status).toBe('processed');
    const messages = await outbox(org);
    expect(messages.map((m: { type: string }) => m.type)).toEqual(['license.updated', 'trial.ending']);
    expect(messages[1].data).toEqual({
      organisation_id: org,
      external_id: null,
      tier: 'team',
      is_active: true,
      is_expired: false,
      version: 2,
      trial_end: trialEnd,
      has_payment_method: true,
    });
    const delivered = await waitFor('trial.ending delivered', () => receiver.accepted(org).find((r) => r.json.type === 'trial.ending'));
    expect(delivered.json.data.has_payment_method).toBe(true);

    // Without a card: has_payment_method false.
    const second = await teamSubscription({ status: 'trialing', trialEnd });
    await send(providerEvent('customer.subscription.trial_will_end', second.sub));
    expect((await outbox(second.org))[1].data.has_payment_method).toBe(false);

    await send(subscriptionEvent('deleted', sub, { created: nowS() - 1 }));
    const after = await send(providerEvent('customer.subscription.trial_will_end', willEnd));
    expect(after.status).toBe('stale');
    expect((await outbox(org)).filter((m: { type: string }) => m.type === 'trial.ending')).toHaveLength(1);
  });

  it('license.updated carries seats and features, and is also sent when only the seats in force change', async () => {
    const { org, sub, o } = await teamSubscription();
    const [first] = await outbox(org);
    expect(first.data).toMatchObject({ tier: 'team', seats: 5, features: { api_access: true, audit_log: true } });

    await send(subscriptionEvent('updated', subscriptionObject({ ...o, id: sub.id, customer: sub.customer, quantity: 8 }), { created: nowS() - 50 }));
    const messages = await outbox(org);
    expect(messages).toHaveLength(2);
    expect(messages[1].data).toMatchObject({ tier: 'team', seats: 8, version: 2 });

    // Nothing in force changed (a new period): no message.
    await send(subscriptionEvent('updated', subscriptionObject({ ...o, id: sub.id, customer: sub.customer, quantity: 8, periodEnd: periodEnd + 1 }), { created: nowS() - 40 }));
    expect(await outbox(org)).toHaveLength(2);

    // Not sold per seat: seats null, and a quantity change notifies nothing.
    const proOrg = (await createOrganisation(t)).id;
    const pro = subscriptionObject({ organisationId: proOrg, tierSource: 'none', price: PRICE_PRO, quantity: 2 });
    await send(subscriptionEvent('created', pro, { created: nowS() - 30 }));
    await send(subscriptionEvent('updated', { ...pro, items: { ...pro.items, data: [{ ...pro.items.data[0], quantity: 3 }] } }, { created: nowS() - 20 }));
    const proMessages = await outbox(proOrg);
    expect(proMessages).toHaveLength(1);
    expect(proMessages[0].data).toMatchObject({ tier: 'pro', seats: null, features: { api_access: true, audit_log: false } });
  });
});
