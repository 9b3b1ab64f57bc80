import { MeterDelivery } from '../src/billing/meters/meter-delivery';
import { MeterEventInput, PaymentProvider } from '../src/provider/payment-provider.port';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { createTestDatabase } from './support/databases';
import { cli } from './support/run-cli';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'svc-key-meters';
const METER = '/v1/billing/meter_events';

/**
 * Spec §13, provider meters: windows of 1 s (METER_FLUSH_S=1), delivered by the job queue to the strict
 * double through the real SDK. Each test waits for its windows to close and for the queue, never a fixed time.
 */
describe('provider meters: delivery', () => {
  let fake: FakeProvider;
  let t: TestApp;
  // The tests count the posts of each window: a per-attempt timeout shorter than a loaded machine's slowest
  // answer would make a second, correct attempt (the provider answers it "already exists") and fail the count.
  const env = () => ({ ...fakeProviderEnv(fake, 10_000), SERVICE_API_KEYS: KEY, PAYPROVIDER_METER_AI_TOKENS: 'tokens_used', METER_FLUSH_S: '1' });
  beforeAll(async () => {
    fake = await startFakeProvider();
    t = await startTestApp({ env: env() });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  afterEach(() => {
    fake.failPath(METER, undefined);
    t.app.get(MeterDelivery).retryDelayS = defaultDelay;
  });
  const defaultDelay = (attempt: number, retryAfterS?: number) => new MeterDelivery(null!, null!, null!, null!).retryDelayS(attempt, retryAfterS);

  const report = (app: TestApp, organisation_id: string, amount: number) =>
    app.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id, metric: 'ai_tokens', amount }).expect(200);
  const customerOrg = async (customer = fake.addCustomer()) => {
    const org = (await createOrganisation(t)).id;
    await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org, customer]);
    return { org, customer };
  };
  type Window = { start: number; end: number; value: number; status: string; attempts: number; lastError: string | null; dueInS: number | null };
  const windows = (org: string): Promise<Window[]> =>
    t.db.query(
      `SELECT window_start::float8 AS start, window_end::float8 AS "end", value::float8 AS value, status, attempts, last_error AS "lastError",
              extract(epoch FROM next_attempt_at - now())::float8 AS "dueInS"
       FROM meter_windows WHERE organisation_id = $1 ORDER BY window_start`,
      [org],
    );
  const settled = (org: string, status = 'delivered') =>
    waitFor(`every window of ${org} ${status}`, async () => {
      const rows = await windows(org);
      return rows.length > 0 && rows.every((w) => w.status === status) && rows;
    });
  const sentTo = (customer: string) => fake.meterEvents.filter((e) => e.customer === customer);
  const postsFor = (org: string) => fake.requests.filter((r) => r.path === METER && String(r.body.identifier).startsWith(`${org}:`));

  it('sends one meter event per window, identifier <organisation>:<metric>:<window start>, totals equal to what was accepted', async () => {
    const { org, customer } = await customerOrg();
    const amounts = [5, 10, 20, 40, 80, 160, 320];
    for (const amount of amounts) await report(t, org, amount);
    const rows = await settled(org);
    const events = sentTo(customer);
    expect(events.map((e) => e.identifier).sort()).toEqual(rows.map((w) => `${org}:ai_tokens:${w.start}`).sort());
    for (const w of rows) {
      expect(events.find((e) => e.identifier === `${org}:ai_tokens:${w.start}`)).toMatchObject({ event_name: 'tokens_used', value: w.value, timestamp: w.end - 1 });
    }
    expect(events.reduce((n, e) => n + e.value, 0)).toBe(amounts.reduce((a, b) => a + b, 0));
    expect(postsFor(org)).toHaveLength(rows.length);
  });

  it('a 429 with Retry-After: the window stays pending until then (its next attempt that far ahead)', async () => {
    fake.failPath(METER, { status: 429, code: 'rate_limit', retryAfter: 3600 });
    const { org } = await customerOrg();
    await report(t, org, 7);
    const w = await waitFor('a refused attempt', async () => (await windows(org)).find((w) => w.attempts >= 1 && w.lastError));
    expect(w.status).toBe('pending');
    expect(w.lastError).toMatch(/^rate_limited/);
    expect(w.dueInS).toBeGreaterThan(3500);
    expect(w.dueInS).toBeLessThanOrEqual(3600);
  });

  it('the provider down or answering 429 for a long stretch: windows pending, then all delivered once, totals equal', async () => {
    // Time moved: the waits between attempts (up to 10 min) shortened to 50 ms; the queue still finds a due
    // retry by its 1 s poll, so each window is attempted about once a second: three of each window's attempts
    // fail with 503, two more with 429, and every window stays pending throughout.
    t.app.get(MeterDelivery).retryDelayS = () => 0.05;
    fake.failPath(METER, { status: 503 });
    const orgs = await Promise.all([customerOrg(), customerOrg(), customerOrg()]);
    const accepted = new Map<string, number>();
    for (const [i, { org }] of orgs.entries()) {
      for (const amount of [1000 + i, 2000, 3]) {
        await report(t, org, amount);
        accepted.set(org, (accepted.get(org) ?? 0) + amount);
      }
    }
    await waitFor('many failed attempts', () => fake.requests.filter((r) => r.path === METER).length >= 9);
    fake.failPath(METER, { status: 429, code: 'rate_limit', retryAfter: 0 });
    const before = fake.requests.filter((r) => r.path === METER).length;
    await waitFor('more failed attempts', () => fake.requests.filter((r) => r.path === METER).length >= before + 6);
    for (const { org } of orgs) expect((await windows(org)).every((w) => w.status === 'pending' || w.status === 'open')).toBe(true);
    fake.failPath(METER, undefined);
    for (const { org, customer } of orgs) {
      const rows = await settled(org);
      const events = sentTo(customer);
      expect(events).toHaveLength(rows.length);
      expect(new Set(events.map((e) => e.identifier)).size).toBe(rows.length);
      expect(events.reduce((n, e) => n + e.value, 0)).toBe(accepted.get(org));
    }
  });

  it('a restart with windows pending: the service started again delivers them, once', async () => {
    // A database of its own, so that no other instance is running while this one is down.
    const db = await createTestDatabase();
    let app = await startTestApp({ databaseUrl: db.url, env: env() });
    try {
      app.app.get(MeterDelivery).retryDelayS = () => 1;
      fake.failPath(METER, { status: 500 });
      const customer = fake.addCustomer();
      const org = (await createOrganisation(app)).id;
      await app.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org, customer]);
      await report(app, org, 11);
      await report(app, org, 31);
      const pending = () => app.db.query(`SELECT status, attempts FROM meter_windows WHERE organisation_id = $1`, [org]);
      await waitFor('a failed attempt', async () => (await pending()).some((w: { attempts: number }) => w.attempts >= 1));
      await app.close();
      fake.failPath(METER, undefined);
      app = await startTestApp({ databaseUrl: db.url, env: env() });
      await waitFor('every window delivered after the restart', async () => {
        const rows: { status: string }[] = await pending();
        return rows.length > 0 && rows.every((w) => w.status === 'delivered');
      });
      expect(sentTo(customer).reduce((n, e) => n + e.value, 0)).toBe(42);
      expect(new Set(sentTo(customer).map((e) => e.identifier)).size).toBe(sentTo(customer).length);
    } finally {
      await app.close();
      await db.drop();
    }
  });

  it('two instances flushing and attempting at once never send a window twice', async () => {
    const other = await startTestApp({ databaseUrl: t.databaseUrl, env: env() });
    try {
      fake.hold(METER);
      const { org, customer } = await customerOrg();
      await report(t, org, 3);
      await report(other, org, 4);
      // Both instances close and attempt every window at once, beside their queue workers.
      await waitFor('windows closed', async () => {
        await Promise.all([t, other].map((app) => app.app.get(MeterDelivery).flush()));
        const rows = await windows(org);
        return rows.length > 0 && rows.every((w) => w.status !== 'open') && rows;
      });
      const keys = (await windows(org)).map((w) => ({ organisationId: org, metric: 'ai_tokens', windowStart: w.start }));
      const racing = keys.flatMap((k) => [t, other].map((app) => app.app.get(MeterDelivery).attempt(k)));
      await waitFor('an attempt held at the provider', () => fake.held() > 0);
      fake.release();
      await Promise.all(racing);
      const rows = await settled(org);
      expect(postsFor(org)).toHaveLength(rows.length);
      expect(sentTo(customer).reduce((n, e) => n + e.value, 0)).toBe(7);
    } finally {
      fake.release();
      await other.close();
    }
  });

  it('an answer lost after the provider kept the event: the next attempt hears "already exists" and counts it delivered', async () => {
    const { org, customer } = await customerOrg();
    await report(t, org, 9);
    const [w] = await settled(org);
    // As if the attempt's answer never came back: the window is pending again, and due.
    await t.db.query(`UPDATE meter_windows SET status = 'pending', next_attempt_at = now(), delivered_at = NULL WHERE organisation_id = $1`, [org]);
    await t.app.get(MeterDelivery).attempt({ organisationId: org, metric: 'ai_tokens', windowStart: w.start });
    expect((await windows(org))[0].status).toBe('delivered');
    expect(postsFor(org)).toHaveLength(2);
    expect(sentTo(customer)).toHaveLength(1);
  });

  it('a window the provider refuses for good is kept failed with the reason; usage:meters and /metrics show it', async () => {
    const { org } = await customerOrg('cus_the_provider_does_not_know');
    await report(t, org, 25);
    const [w] = await settled(org, 'failed');
    expect(w.lastError).toMatch(/No such customer/);
    const { org: good } = await customerOrg();
    await report(t, good, 12);
    await settled(good);
    await report(t, good, 30); // a window still open or pending

    const refused = await cli(['usage:meters', '--org', org], {}, { app: t.app });
    expect(refused.code).toBe(0);
    expect(refused.json).toEqual({ data: [{ organisation_id: org, metric: 'ai_tokens', used: 25, reported: 0, pending: 0, failed: 25 }] });
    const ok = await cli(['usage:meters', '--org', good], {}, { app: t.app });
    expect(ok.json.data[0]).toMatchObject({ organisation_id: good, metric: 'ai_tokens', used: 42 });
    expect(ok.json.data[0].reported + ok.json.data[0].pending).toBe(42);
    expect(ok.json.data[0].reported).toBeGreaterThanOrEqual(12);
    const all = await cli(['usage:meters'], {}, { app: t.app });
    expect(all.json.data.map((l: { organisation_id: string }) => l.organisation_id)).toEqual(expect.arrayContaining([org, good]));
    expect((await cli(['usage:meters', '--org', 'nope'], {}, { app: t.app })).code).toBe(2);

    const metrics = (await t.http().get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/meter_events_total\{outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/meter_events_total\{outcome="failed"\} [1-9]/);
    expect(metrics).toMatch(/meter_windows_pending\{state="pending"\} \d+/);
  });
});

/** Spec §13 in the sandbox: it records the meter events and its invoice pages show them. */
describe('provider meters: the sandbox', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, PAYPROVIDER_METER_AI_TOKENS: 'tokens_used', METER_FLUSH_S: '1', APP_URL: 'http://localhost:3000' } });
  });
  afterAll(() => t.close());

  it('a paid organisation\'s usage reaches the sandbox meter and shows on its invoice page', async () => {
    const org = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    const session = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'pro' }).expect(201);
    await t.http().post(`${new URL(session.body.url).pathname}/pay`).type('form').send('').expect(303);
    for (const amount of [1200, 34]) {
      await t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount }).expect(200);
    }
    await waitFor('the windows delivered to the sandbox', async () => {
      const rows: { status: string }[] = await t.db.query(`SELECT status FROM meter_windows WHERE organisation_id = $1`, [org]);
      return rows.length > 0 && rows.every((w) => w.status === 'delivered');
    });
    const [kept] = await t.db.query(
      `SELECT sum(value)::float8 AS total, count(*)::int AS n FROM sandbox_meter_events WHERE identifier LIKE $1 || ':ai_tokens:%'`,
      [org],
    );
    expect(kept.total).toBe(1234);
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: org }).expect(200);
    const page = await t.http().get(new URL(history.body.data[0].hosted_invoice_url).pathname).expect(200);
    expect(page.text).toContain('<h2>Metered usage in this period</h2>');
    expect(page.text).toContain(`<tr><td>tokens_used</td><td>1,234</td><td>${kept.n}</td></tr>`);
  });
});

/** The strict double answers meter events as the provider documents them (docs/payments.md), through the real SDK. */
describe('provider meters: the provider\'s rules, through the port', () => {
  let fake: FakeProvider;
  let t: TestApp;
  beforeAll(async () => {
    fake = await startFakeProvider();
    t = await startTestApp({ env: { ...fakeProviderEnv(fake, 10_000), PAYPROVIDER_METER_AI_TOKENS: 'tokens_used' } });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  const event = (overrides: Partial<MeterEventInput> = {}): MeterEventInput => ({
    eventName: 'tokens_used',
    customerId: fake.addCustomer(),
    value: 5,
    identifier: `org:ai_tokens:${Math.random()}`,
    timestamp: Math.floor(Date.now() / 1000),
    ...overrides,
  });
  const send = (e: MeterEventInput) => t.app.get(PaymentProvider).reportMeterEvent(e);

  it('an identifier it already has → duplicate; timestamps beyond 35 days back or 5 minutes ahead → refused', async () => {
    const first = event();
    expect(await send(first)).toBe('created');
    expect(await send({ ...first, value: 6 })).toBe('duplicate');
    const now = Math.floor(Date.now() / 1000);
    await expect(send(event({ timestamp: now - 35 * 86_400 - 60 }))).rejects.toMatchObject({ kind: 'rejected', param: 'timestamp' });
    await expect(send(event({ timestamp: now + 6 * 60 }))).rejects.toMatchObject({ kind: 'rejected', param: 'timestamp' });
    await expect(send(event({ customerId: 'cus_nobody' }))).rejects.toMatchObject({ kind: 'rejected' });
    expect(fake.meterEvents.filter((e) => e.identifier === first.identifier)).toHaveLength(1);
  });

  it('one call at a time per customer and meter: a second one meanwhile is a 429 (retried by the queue, not refused)', async () => {
    const customerId = fake.addCustomer();
    // The first call's answer is held: for the provider it is still under way.
    fake.hold(METER, { after: true });
    const held = send(event({ customerId }));
    await waitFor('a held call', () => fake.held() > 0);
    const second = send(event({ customerId }));
    await waitFor('the second call answered and held', () => fake.held() > 1);
    fake.release();
    expect(await held).toBe('created');
    await expect(second).rejects.toMatchObject({ kind: 'rate_limited' });
    expect(fake.meterEvents.filter((e) => e.customer === customerId)).toHaveLength(1);
  });
});
