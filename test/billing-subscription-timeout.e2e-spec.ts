import { FAKE_SECRET_KEY, FakeProvider } from './support/fake-provider';
import { auditOf, startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

/**
 * A provider that takes longer than the service waits (spec §11.4): the provider holds the change, carries it
 * out after the service's SDK gave up (its retries under the same idempotency key meet 409
 * idempotency_key_in_use), and invoices it. The caller is told the outcome is unknown (504 provider_timeout),
 * never that nothing changed; the change claim is kept until the provider's answer (asked for again under the
 * same key) or its webhook settles it; the change is then audited once, naming the person who asked for it.
 */
describe('billing: a subscription change the provider answers too late', () => {
  let fake: FakeProvider;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    a = await startSubscriptionApp(fake);
  });
  afterAll(async () => {
    fake.release();
    await b?.close();
    await a?.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
    fake.webhookTarget(a.baseUrl);
  });

  type Org = Awaited<ReturnType<typeof subscribed>>;
  const post = (t: TestApp, s: Org, path: string, body: object = {}) =>
    t.http().post(`/api/billing/subscription/${path}`).set(s.owner.auth).send({ organisation_id: s.org.id, ...body });
  const read = async (t: TestApp, s: Org) =>
    (await t.http().get('/api/billing/subscription').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(200)).body.subscription;
  const claims = async (t: TestApp, s: Org) => t.db.query(`SELECT awaiting FROM subscription_change_claims WHERE organisation_id = $1`, [s.org.id]);
  const updatesOf = (s: Org) => fake.requests.filter((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${s.subscriptionId}`);

  /** The provider holds the change, as in the report: the service times out, its retries find the key in use. */
  async function timedOut(t: TestApp, s: Org, path: string, body: object) {
    fake.hold(`/v1/subscriptions/${s.subscriptionId}`, { method: 'POST' });
    const res = await post(t, s, path, body).expect(504);
    expect(res.body).toEqual({ statusCode: 504, error: 'Gateway Timeout', code: 'provider_timeout', message: expect.stringContaining('may have been applied') });
    expect(res.body.message).not.toMatch(/nothing was changed/i);
    const keys = new Set(updatesOf(s).map((r) => r.headers['idempotency-key']));
    expect(updatesOf(s).length).toBeGreaterThanOrEqual(2);
    expect(keys.size).toBe(1);
    return res;
  }

  it("the provider's answer, asked for again under the same key, settles it: applied, audited naming the user, the claim ended", async () => {
    const s = await subscribed(a, fake, { price: 'team_month', seats: 2 });
    await timedOut(a, s, 'change', { seats: 3 });
    // Unknown yet: nothing shown as changed, nothing audited, and no second change starts from the old state.
    expect(await read(a, s)).toMatchObject({ seats: 2 });
    expect(await auditOf(a, s.org.id)).toEqual([]);
    expect(await claims(a, s)).toEqual([{ awaiting: expect.objectContaining({ actor: `user:${s.owner.id}`, action: 'subscription.changed' }) }]);
    const second = await post(a, s, 'change', { seats: 4 }).expect(409);
    expect(second.body.code).toBe('change_in_progress');
    expect(second.body.message).toContain('may have been applied');
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);

    // The provider carries the held change out (as it did, 60 s later, in the report).
    fake.release();
    await waitFor('the change audited', async () => (await auditOf(a, s.org.id)).length === 1 || undefined, 60_000);
    expect(s.provider().items.data[0].quantity).toBe(3);
    const [entry] = await auditOf(a, s.org.id);
    expect(entry).toMatchObject({
      action: 'subscription.changed',
      actor: `user:${s.owner.id}`,
      before: { subscription: { seats: 2 } },
      after: { subscription: { seats: 3 }, settled_by: 'provider' },
    });
    expect(await read(a, s)).toMatchObject({ seats: 3, pending_change: null });
    expect(await claims(a, s)).toEqual([]);
    // Asked again, the provider answered what it did: the change was made once, one key throughout.
    expect(new Set(updatesOf(s).map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(fake.queuedEvents.filter((e) => e.type === 'customer.subscription.updated')).toHaveLength(1);
    expect(fake.queuedEvents.filter((e) => e.type === 'invoice.paid')).toHaveLength(1);
    // Its events change nothing more; the next change goes through.
    expect(await fake.deliverEvents()).not.toContain(500);
    expect(await auditOf(a, s.org.id)).toHaveLength(1);
    expect((await post(a, s, 'change', { seats: 5 }).expect(200)).body.subscription.seats).toBe(5);
  });

  it('the webhook settles it in another instance when the one that asked stopped meanwhile', async () => {
    b = await startSubscriptionApp(fake, { databaseUrl: a.databaseUrl });
    fake.webhookTarget(a.baseUrl);
    const s = await subscribed(b, fake, { price: 'team_month', seats: 2 });
    const { owner } = s;
    await timedOut(b, s, 'cancel', {});
    // The instance that asked stops (its asking again with it); the provider then carries the change out.
    await b.close();
    b = undefined as unknown as TestApp;
    fake.release();
    await waitFor('the provider carried the cancellation out', () => s.provider().cancel_at_period_end === true || undefined);
    expect(await claims(a, s)).toHaveLength(1);
    expect(await fake.deliverEvents()).toEqual([200]);
    const [entry] = await auditOf(a, s.org.id);
    expect(entry).toMatchObject({
      action: 'subscription.cancel_scheduled',
      actor: `user:${owner.id}`,
      before: { subscription: { cancel_at_period_end: false } },
      after: { subscription: { cancel_at_period_end: true }, settled_by: 'webhook' },
    });
    expect(await claims(a, s)).toEqual([]);
    expect((await post(a, s, 'resume').expect(200)).body.subscription.cancel_at_period_end).toBe(false);
  });

  it('a change the provider refuses when asked again ends the claim with nothing audited', async () => {
    const s = await subscribed(a, fake, { price: 'team_month', seats: 2 });
    await timedOut(a, s, 'change', { seats: 3 });
    // The held request fails at the provider; asked again, it answers that failure (it keeps it under the key).
    fake.failPath(`/v1/subscriptions/${s.subscriptionId}`, { status: 400, code: 'resource_missing', message: 'No such subscription item' });
    try {
      fake.release();
      await waitFor('the claim ended', async () => (await claims(a, s)).length === 0 || undefined, 60_000);
    } finally {
      fake.failPath(`/v1/subscriptions/${s.subscriptionId}`, undefined);
    }
    expect(await auditOf(a, s.org.id)).toEqual([]);
    expect(await read(a, s)).toMatchObject({ seats: 2 });
    expect(s.provider().items.data[0].quantity).toBe(2);
  });

  it('the strict double holds a request as the provider does: its key is in use meanwhile, then answers what it did', async () => {
    const s = await subscribed(a, fake, { price: 'team_month', seats: 2 });
    const send = (key: string) =>
      fetch(`${fake.url}/v1/subscriptions/${s.subscriptionId}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${FAKE_SECRET_KEY}`, 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': key },
        body: 'cancel_at_period_end=true',
      });
    fake.hold(`/v1/subscriptions/${s.subscriptionId}`, { method: 'POST' });
    const first = send('key-held');
    await waitFor('the request held', () => fake.held() === 1 || undefined);
    const busy = await send('key-held');
    expect(busy.status).toBe(409);
    expect(busy.headers.get('stripe-should-retry')).toBe('true');
    expect(((await busy.json()) as { error: unknown }).error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_in_use' });
    expect(s.provider().cancel_at_period_end).toBe(false);
    fake.release();
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(s.provider().cancel_at_period_end).toBe(true);
    const again = await send('key-held');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await answered.json());
  });
});
