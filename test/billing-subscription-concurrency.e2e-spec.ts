import { FakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { auditOf, startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

/**
 * Subscription changes at once (spec §11.4), on two app instances sharing one database, against the strict
 * double: two changes of one subscription are made one after the other, the second from the first one's
 * result; a change racing its own webhook events has one effect, in either order.
 */
describe('billing: concurrent subscription changes (two instances, one database)', () => {
  let fake: FakeProvider;
  let a: TestApp;
  let b: TestApp;
  let receiver: NotificationReceiver;

  beforeAll(async () => {
    const secret = newNotifySecret();
    receiver = await startReceiver(secret);
    const env = { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret };
    fake = await startSubscriptionDouble();
    a = await startSubscriptionApp(fake, { env });
    b = await startSubscriptionApp(fake, { env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await fake?.close();
    await receiver?.close();
  });
  /** The license.updated messages written for the organisation (the outbox: each one is sent). */
  const licenseMessages = async (organisationId: string) =>
    (await a.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 AND type = 'license.updated'`, [organisationId])).map(
      (m: { body: string }) => JSON.parse(m.body).data,
    );
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
  });

  const change = (t: TestApp, owner: { auth: Record<string, string> }, body: object) =>
    t.http().post('/api/billing/subscription/change').set(owner.auth).send(body);
  const updates = () => fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/subscriptions/'));
  const read = (t: TestApp, owner: { auth: Record<string, string> }, organisationId: string) =>
    t.http().get('/api/billing/subscription').query({ organisation_id: organisationId }).set(owner.auth).expect(200);

  it('the same upgrade twice at once: one is made, the other sees it made (400 no_change); the provider is asked once', async () => {
    const s = await subscribed(a, fake, { price: 'team_month', seats: 2 });
    const body = { organisation_id: s.org.id, seats: 6 };
    const answers = await Promise.all([change(a, s.owner, body), change(b, s.owner, body)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(answers.find((r) => r.status === 400)!.body.code).toBe('no_change');
    expect(updates()).toHaveLength(1);
    expect(s.provider().items.data[0].quantity).toBe(6);
    expect(await auditOf(a, s.org.id)).toHaveLength(1);
  });

  it('two different changes at once: both are made, one after the other, the second from the first one\'s result', async () => {
    const s = await subscribed(a, fake, { price: 'team_month', seats: 2 });
    const answers = await Promise.all([change(a, s.owner, { organisation_id: s.org.id, seats: 5 }), change(b, s.owner, { organisation_id: s.org.id, seats: 8 })]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const audit = await auditOf(a, s.org.id);
    expect(audit).toHaveLength(2);
    // No lost update: each change started from what the one before left.
    expect(audit[0].before.subscription.seats).toBe(2);
    expect(audit[1].before.subscription.seats).toBe(audit[0].after.subscription.seats);
    const last = audit[1].after.subscription.seats;
    expect(s.provider().items.data[0].quantity).toBe(last);
    expect((await read(b, s.owner, s.org.id)).body.subscription.seats).toBe(last);
  });

  it('a change whose webhook events arrive (at the other instance) before its answer is applied: one effect', async () => {
    const s = await subscribed(a, fake, { price: 'pro_month', members: 2 });
    const before = (await licenseMessages(s.org.id)).length;
    // The provider makes the change and sends its events; its answer to instance a is held meanwhile.
    fake.hold(`/v1/subscriptions/${s.subscriptionId}`, { after: true, method: 'POST' });
    const pending = change(a, s.owner, { organisation_id: s.org.id, tier: 'team' }).then((r) => r);
    try {
      await waitFor('the change made at the provider', () => fake.held() === 1 || undefined);
      fake.webhookTarget(b.baseUrl);
      expect(await fake.deliverEvents()).toEqual([200, 200, 200]);
      expect((await read(b, s.owner, s.org.id)).body.subscription).toMatchObject({ tier: 'team', seats: 2 });
    } finally {
      fake.release();
    }
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.subscription).toMatchObject({ tier: 'team', seats: 2 });
    expect(await auditOf(a, s.org.id)).toHaveLength(1);
    // The web app hears of the new tier once.
    const messages = (await licenseMessages(s.org.id)).slice(before);
    expect(messages.map((m: { tier: string }) => m.tier)).toEqual(['team']);
    const history = await a.db.query(`SELECT invoice_id FROM billing_history WHERE organisation_id = $1`, [s.org.id]);
    expect(history).toHaveLength(1);
    expect((await read(a, s.owner, s.org.id)).body).toEqual(res.body);
  });

  it('a change whose webhook events arrive after its answer was applied: they change nothing more', async () => {
    const s = await subscribed(a, fake, { price: 'pro_month' });
    const before = (await licenseMessages(s.org.id)).length;
    const res = await change(a, s.owner, { organisation_id: s.org.id, tier: 'team' }).expect(200);
    fake.webhookTarget(b.baseUrl);
    const ids = fake.queuedEvents.map((e) => e.id);
    expect(await fake.deliverEvents()).toEqual([200, 200, 200]);
    const ledger = await a.db.query(`SELECT status FROM webhook_events WHERE id = ANY($1)`, [ids]);
    expect(ledger.map((e: { status: string }) => e.status)).not.toContain('failed');
    expect((await read(b, s.owner, s.org.id)).body).toEqual(res.body);
    expect(await auditOf(a, s.org.id)).toHaveLength(1);
    expect((await licenseMessages(s.org.id)).slice(before).map((m: { tier: string }) => m.tier)).toEqual(['team']);
  });
});
