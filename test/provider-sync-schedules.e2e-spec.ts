import * as pg from 'pg';
import { eventCommands } from '../src/cli/events.commands';
import { PaymentProvider } from '../src/provider/payment-provider.port';
import { ProviderSync, SyncSummary } from '../src/webhook/provider-sync';
import { FAKE_SECRET_KEY, FakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { providerEvent } from './support/provider-events';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const nowS = () => Math.floor(Date.now() / 1000);

interface Statement {
  text: string;
  values: unknown[];
}

/**
 * The statements of the transaction that corrected `subscriptionId` while `work` ran: on its connection, from
 * the one taking the subscription's lock to the COMMIT. The app's connections are node-postgres's own
 * clients: every statement goes through pg.Client's query() (as test/hot-statement-plans.e2e-spec.ts counts them).
 */
async function correctionStatements(subscriptionId: string, work: () => Promise<unknown>): Promise<Statement[]> {
  const capture = jest.spyOn(pg.Client.prototype, 'query');
  let calls: unknown[][];
  let clients: unknown[];
  try {
    await work();
  } finally {
    [calls, clients] = [[...capture.mock.calls], [...capture.mock.contexts]];
    capture.mockRestore();
  }
  const sent = calls.map(([query, values], i) => {
    const q = query as string | { text?: string; values?: unknown[] };
    return { client: clients[i], text: typeof q === 'string' ? q : (q?.text ?? ''), values: (typeof q === 'string' ? values : q?.values) ?? [] };
  });
  const lock = sent.findIndex((s) => s.text.includes('pg_advisory_xact_lock') && JSON.stringify(s.values).includes(`"webhook:${subscriptionId}"`));
  expect(lock).toBeGreaterThanOrEqual(0);
  const transaction = sent.slice(lock).filter((s) => s.client === sent[lock].client);
  const end = transaction.findIndex((s) => /^\s*COMMIT\b/i.test(s.text));
  expect(end).toBeGreaterThan(0);
  return transaction.slice(0, end).map(({ text, values }) => ({ text, values: values as unknown[] }));
}

/**
 * provider:sync (spec §9) carries the subscription's schedule and pending change too (spec §11.4, 11.5): a
 * `subscription_schedule.*` event lost for good (and gone from the provider's event list) is made up for by the
 * subscriptions' list, whose schedules come expanded, at no request of their own.
 */
describe('reconciliation of schedules and pending changes', () => {
  let fake: FakeProvider;
  let t: TestApp;
  let receiver: NotificationReceiver;
  const logLines: string[] = [];

  beforeAll(async () => {
    const secret = newNotifySecret();
    receiver = await startReceiver(secret);
    fake = await startSubscriptionDouble();
    t = await startSubscriptionApp(fake, { logLines, env: { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret } });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await receiver.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
  });

  const sync = async () => (await eventCommands['provider:sync'].run(t.app, { since: '30' }, [], t.config)) as SyncSummary;
  const read = async (user: { auth: Record<string, string> }, organisationId: string) =>
    (await t.http().get('/api/billing/subscription').query({ organisation_id: organisationId }).set(user.auth).expect(200)).body.subscription;
  const stored = async (subscriptionId: string) =>
    (await t.db.query(`SELECT schedule_id, pending_change, xmin::text AS version FROM provider_subscriptions WHERE subscription_id = $1`, [subscriptionId]))[0];
  /** The provider's events of what happened since: never delivered, and gone from its list (older than it keeps). */
  const loseEvents = () => {
    fake.queuedEvents.length = 0;
    fake.events.length = 0;
  };
  const corrections = (subscriptionId: string) =>
    logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'subscription corrected to what the provider says' && l.subscriptionId === subscriptionId);
  const providerCalls = () => fake.requests.map((r) => `${r.method} ${r.path}`);
  /** The license.updated messages written for the organisation (the outbox), oldest first. */
  const licenseMessages = async (organisationId: string) =>
    (await t.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 AND type = 'license.updated' ORDER BY version`, [organisationId])).map(
      (r: { body: string }) => JSON.parse(r.body),
    );

  it('a downgrade scheduled at the provider whose events never arrived shows as pending_change after a sync; an older schedule event cannot undo it', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 6, members: 2 });
    // Scheduled at the provider (its dashboard, or an answer this service never got): 4 seats from the period's end.
    const schedule = await t.app.get(PaymentProvider).scheduleItemChange(s.subscriptionId, { scheduleId: null, next: { price: 'team_month', quantity: 4 } });
    loseEvents();
    expect((await read(s.owner, s.org.id)).pending_change).toBeNull();
    const notified = (await licenseMessages(s.org.id)).length;
    fake.requests.length = 0;

    const summary = await sync();
    expect(summary).toMatchObject({ events_applied: 0, subscriptions_corrected: 1 });
    const pendingChange = { tier: 'team', interval: 'month', seats: 4, effective_at: s.periodEnd };
    expect(await read(s.owner, s.org.id)).toMatchObject({ tier: 'team', seats: 6, pending_change: pendingChange });
    expect(await stored(s.subscriptionId)).toMatchObject({ schedule_id: schedule.id });
    // One list page with the schedules expanded; no request per subscription or schedule.
    expect(providerCalls()).toEqual(['GET /v1/events', 'GET /v1/subscriptions']);
    expect(fake.requests[1].query).toEqual({ status: 'all', limit: '100', expand: ['data.schedule'] });
    expect(corrections(s.subscriptionId)).toEqual([
      expect.objectContaining({ schedule: { before: { scheduleId: null, pendingChange: null }, after: { scheduleId: schedule.id, pendingChange } } }),
    ]);
    // The license in force is the same until the provider makes the change: no license.updated.
    expect(await licenseMessages(s.org.id)).toHaveLength(notified);

    // The schedule's release event of before the correction, arriving late, is older news.
    const released = { ...schedule, status: 'released', released_subscription: s.subscriptionId, subscription: null };
    await deliver(t.app.getHttpServer(), providerEvent('subscription_schedule.released', released, { created: nowS() - 60 })).expect(200);
    expect((await read(s.owner, s.org.id)).pending_change).toEqual(pendingChange);
    expect((await sync()).subscriptions_corrected).toBe(0);
  });

  it('a schedule released at the provider whose events were lost: after a sync, pending_change is null', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 5 });
    const changed = await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, seats: 3 }).expect(200);
    expect(changed.body.subscription.pending_change).toMatchObject({ seats: 3 });
    expect(await fake.deliverEvents()).not.toContain(500);
    const scheduleId = s.provider().schedule as string;
    // Released at the provider; neither the schedule's event nor the subscription's reached the service.
    await t.app.get(PaymentProvider).releaseSchedule(scheduleId);
    loseEvents();
    expect((await read(s.owner, s.org.id)).pending_change).toMatchObject({ seats: 3 });
    const notified = (await licenseMessages(s.org.id)).length;

    expect(await sync()).toMatchObject({ events_applied: 0, subscriptions_corrected: 1 });
    expect(await read(s.owner, s.org.id)).toMatchObject({ seats: 5, pending_change: null });
    expect(await stored(s.subscriptionId)).toMatchObject({ schedule_id: null, pending_change: null });
    expect(corrections(s.subscriptionId).at(-1)).toMatchObject({
      schedule: { before: { scheduleId, pendingChange: { seats: 3 } }, after: { scheduleId: null, pendingChange: null } },
    });
    // A schedule correction alone changes nothing the license shows: only the schedule's part is logged, nothing notified.
    expect(corrections(s.subscriptionId).at(-1).before).toBeUndefined();
    expect(await licenseMessages(s.org.id)).toHaveLength(notified);
    // The organisation can schedule a downgrade again.
    await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, seats: 4 }).expect(200);
  });

  it('a schedule that completed at the period end, its events lost: one correction of the seats (notified) and of the pending change, from one read of the row', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 6 });
    await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, seats: 4 }).expect(200);
    expect(await fake.deliverEvents()).not.toContain(500);
    const scheduleId = s.provider().schedule as string;
    const notified = (await licenseMessages(s.org.id)).length;
    // At the period's end the provider made the change and the schedule let the subscription go.
    const item = s.provider().items.data[0];
    Object.assign(item, { quantity: 4, current_period_start: s.periodEnd - 1, current_period_end: s.periodEnd - 1 + 30 * 86_400 });
    s.provider().schedule = null;
    Object.assign(fake.schedules.get(scheduleId)!, { status: 'completed', completed_at: nowS(), released_subscription: null });
    loseEvents();

    let summary: SyncSummary | undefined;
    const statements = await correctionStatements(s.subscriptionId, async () => (summary = await sync()));
    expect(summary).toMatchObject({ events_applied: 0, subscriptions_corrected: 1 });
    // Under the lock (the first statement), the row is read once for both corrections, then written by each.
    const reads = statements.filter((st) => /^\s*SELECT\b[\s\S]*\bprovider_subscriptions\b/i.test(st.text) && st.values.includes(s.subscriptionId));
    const writes = statements.filter((st) => /^\s*UPDATE provider_subscriptions\b/i.test(st.text) && st.values[0] === s.subscriptionId);
    expect(reads).toHaveLength(1);
    expect(statements.indexOf(reads[0])).toBeGreaterThan(0);
    expect(writes.map((st) => (/\bschedule_id\b/.test(st.text) ? 'schedule' : 'state'))).toEqual(['state', 'schedule']);
    expect(statements.indexOf(writes[0])).toBeGreaterThan(statements.indexOf(reads[0]));
    expect(await read(s.owner, s.org.id)).toMatchObject({ seats: 4, current_period_end: s.periodEnd - 1 + 30 * 86_400, pending_change: null });
    expect(corrections(s.subscriptionId).at(-1)).toMatchObject({
      before: { seats: 6 },
      after: { seats: 4 },
      schedule: { before: { scheduleId, pendingChange: { seats: 4 } }, after: { scheduleId: null, pendingChange: null } },
    });
    const messages = await licenseMessages(s.org.id);
    expect(messages).toHaveLength(notified + 1);
    expect(messages.at(-1).data).toMatchObject({ tier: 'team', seats: 4 });
  });

  it('nothing drifted (a pending change the service already shows): no correction, no write, no request beyond the lists', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 6 });
    await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, seats: 2 }).expect(200);
    expect(await fake.deliverEvents()).not.toContain(500);
    await sync();
    const before = await stored(s.subscriptionId);
    fake.requests.length = 0;

    expect(await sync()).toMatchObject({ events_applied: 0, subscriptions_corrected: 0 });
    // The row was not written (same row version).
    expect(await stored(s.subscriptionId)).toEqual(before);
    expect(providerCalls()).toEqual(['GET /v1/events', 'GET /v1/subscriptions']);
    expect((await read(s.owner, s.org.id)).pending_change).toMatchObject({ seats: 2 });
  });

  it('an upgrade while a downgrade is pending releases the schedule at the provider: the answer and the read show no pending_change, and a sync finds nothing to correct', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 5 });
    await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, seats: 3 }).expect(200);
    const scheduleId = s.provider().schedule as string;
    expect(await fake.deliverEvents()).not.toContain(500);
    fake.requests.length = 0;

    // Yearly is an upgrade (spec §11.4): now, and the pending downgrade goes.
    const res = await t.http().post('/api/billing/subscription/change').set(s.owner.auth).send({ organisation_id: s.org.id, interval: 'year' }).expect(200);
    expect(res.body.subscription).toMatchObject({ tier: 'team', interval: 'year', seats: 5, pending_change: null });
    expect(providerCalls()[0]).toBe(`POST /v1/subscription_schedules/${scheduleId}/release`);
    expect(fake.schedules.get(scheduleId)!.status).toBe('released');
    expect(s.provider().schedule).toBeNull();
    // Without any of the provider's events: the answers alone left the service as the provider is.
    loseEvents();
    expect(await read(s.owner, s.org.id)).toEqual(res.body.subscription);
    expect(await sync()).toMatchObject({ subscriptions_corrected: 0 });
    expect(await stored(s.subscriptionId)).toMatchObject({ schedule_id: null, pending_change: null });
  });

  it("the port's retrieveSchedule (a subscription fetched alone) answers the provider's schedule, not_found for one it does not know; the double expands data.schedule only", async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 3 });
    const provider = t.app.get(PaymentProvider);
    const made = await provider.scheduleItemChange(s.subscriptionId, { scheduleId: null, next: { price: 'team_month', quantity: 2 } });
    expect(await provider.retrieveSchedule(made.id)).toEqual(made);
    await expect(provider.retrieveSchedule('sub_sched_unknown')).rejects.toMatchObject({ kind: 'not_found' });
    await provider.releaseSchedule(made.id);
    loseEvents();
    const refused = await fetch(`${fake.url}/v1/subscriptions?expand[]=data.customer`, { headers: { authorization: `Bearer ${FAKE_SECRET_KEY}` } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ param: 'expand', message: 'The test double does not implement expand[]=data.customer' });
  });
});

describe('reconciliation of pending changes in sandbox mode', () => {
  it("reads the sandbox's schedules with its subscriptions and restores a pending change the service lost", async () => {
    const t = await startTestApp();
    try {
      const organisationId = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org: organisationId, role: 'owner' });
      const undelivered = async () => Number((await t.db.query(`SELECT count(*)::int AS n FROM sandbox_events WHERE delivered_at IS NULL`))[0].n);
      const settled = () => waitFor('the sandbox events delivered', async () => ((await undelivered()) === 0 ? true : undefined));
      const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: organisationId, tier: 'team' }).expect(201);
      await t.http().post(`${new URL(checkout.body.url).pathname}/pay`).type('form').send('').expect(303);
      await settled();
      const changed = await t.http().post('/api/billing/subscription/change').set(owner.auth).send({ organisation_id: organisationId, tier: 'pro' }).expect(200);
      const pendingChange = changed.body.subscription.pending_change;
      expect(pendingChange).toMatchObject({ tier: 'pro' });
      await settled();
      // Lost here, as if its events never came.
      await t.db.query(`UPDATE provider_subscriptions SET schedule_id = NULL, pending_change = NULL WHERE organisation_id = $1`, [organisationId]);

      expect(await t.app.get(ProviderSync).run()).toMatchObject({ events_applied: 0, subscriptions_corrected: 1 });
      const read = await t.http().get('/api/billing/subscription').query({ organisation_id: organisationId }).set(owner.auth).expect(200);
      expect(read.body.subscription.pending_change).toEqual(pendingChange);
      const [{ schedule_id: scheduleId }] = await t.db.query(`SELECT schedule_id FROM provider_subscriptions WHERE organisation_id = $1`, [organisationId]);
      expect(await t.app.get(PaymentProvider).retrieveSchedule(scheduleId)).toMatchObject({ id: scheduleId, status: 'active' });
      await expect(t.app.get(PaymentProvider).retrieveSchedule('sub_sched_unknown')).rejects.toMatchObject({ kind: 'not_found' });
      expect(await t.app.get(ProviderSync).run()).toMatchObject({ subscriptions_corrected: 0 });
    } finally {
      await t.close();
    }
  });
});
