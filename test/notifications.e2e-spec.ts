import { Webhook } from 'standardwebhooks';
import { ConfigError } from '../src/config/app-config';
import { eventCommands } from '../src/cli/events.commands';
import { NotificationsService } from '../src/notifications/notifications.service';
import { ATTEMPT_TIMEOUT_MS, NotificationDeliveryService, retryDelayS } from '../src/notifications/notification-delivery.service';
import { cli } from './support/run-cli';
import { createTestDatabase } from './support/databases';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { waitFor } from './support/wait-for';
import { providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, startTestApp, testConfig, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'svc_notifications_test_key';
const PRICE_PRO = 'price_notify_pro';
const PRICE_TEAM = 'price_notify_team';
const nowS = () => Math.floor(Date.now() / 1000);

/** Outbound notifications to the web app (spec §10), through the real HTTP paths and a verifying receiver. */
describe('notifications to the web app', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let fake: FakeProvider;
  let t: TestApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startFakeProvider({ prices: [PRICE_PRO, PRICE_TEAM] });
    env = {
      ...fakeProviderEnv(fake, 300),
      PAYPROVIDER_PRICE_PRO: PRICE_PRO,
      PAYPROVIDER_PRICE_TEAM: PRICE_TEAM,
      SERVICE_API_KEYS: KEY,
      NOTIFY_URLS: receiver.url,
      NOTIFY_SECRET: secret,
    };
    t = await startTestApp({ env });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await receiver.close();
  });
  beforeEach(() => (receiver.respond = () => 200));

  const send = (event: object) => deliver(t.app.getHttpServer(), event);
  const subscription = (org: string, price = PRICE_PRO, extra: Record<string, unknown> = {}) =>
    subscriptionObject({ organisationId: org, tierSource: 'none', price, ...extra });
  const outbox = async (org: string) =>
    (await t.db.query(`SELECT id, type, version FROM notification_messages WHERE organisation_id = $1 ORDER BY version`, [org])) as {
      id: string;
      type: string;
      version: number;
    }[];
  const report = (org: string, amount: number) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'projects', amount });
  // The service records a delivery once the receiver's answer is in, a moment after the receiver saw it.
  const deliveredRow = (org: string) =>
    waitFor('the delivery recorded as delivered', async () => {
      const [row] = await t.db.query(
        `SELECT d.status, d.attempts, d.last_error FROM notification_deliveries d JOIN notification_messages m ON m.id = d.message_id
         WHERE m.organisation_id = $1`,
        [org],
      );
      return row?.status === 'delivered' && row;
    });
  const messages = (org: string, n: number) => waitFor(`${n} message(s)`, () => receiver.accepted(org).length >= n && receiver.accepted(org));

  it('a tier change is one signed license.updated (version 1), the next is version 2; a duplicate delivery adds none', async () => {
    const org = (await createOrganisation(t)).id;
    expect(await outbox(org)).toEqual([]); // creating an organisation notifies nothing
    const sub = subscription(org);
    const created = subscriptionEvent('created', sub, { created: nowS() - 10 });
    await send(created).expect(200);

    const [first] = await messages(org, 1);
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(Math.abs(Number(first.headers['webhook-timestamp']) - nowS())).toBeLessThan(30);
    expect(first.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // The exact bytes: keys in the documented order.
    expect(JSON.parse(first.body)).toEqual({ type: 'license.updated', timestamp: expect.any(String), data: expect.any(Object) });
    expect(Object.keys(JSON.parse(first.body))).toEqual(['type', 'timestamp', 'data']);
    expect(first.json.data).toEqual({
      organisation_id: org,
      external_id: null,
      tier: 'pro',
      is_active: true,
      is_expired: false,
      version: 1,
      // spec §11.5: the features in force and the seats (null: not sold per seat).
      features: { api_access: true, audit_log: false, sso: false },
      seats: null,
      plan_version: 1,
    });
    expect(new Date(first.json.timestamp).toISOString()).toBe(first.json.timestamp);
    // A receiver rejects a body that was tampered with, or signed with another secret.
    const headers = first.headers as Record<string, string>;
    expect(() => new Webhook(secret).verify(first.body.replace('"pro"', '"team"'), headers)).toThrow();
    expect(() => new Webhook(newNotifySecret()).verify(first.body, headers)).toThrow();

    // The same event again: a duplicate, no second message (the outbox is written with the change).
    expect((await send(created).expect(200)).body.status).toBe('duplicate');
    expect(await outbox(org)).toHaveLength(1);

    await t.db.query(`UPDATE organisations SET external_id = 'web-org-42' WHERE id = $1`, [org]);
    await send(subscriptionEvent('updated', subscription(org, PRICE_TEAM, { id: sub.id, customer: sub.customer }), { created: nowS() - 5 })).expect(200);
    const [, second] = await messages(org, 2);
    expect(second.json.data).toEqual({
      organisation_id: org,
      external_id: 'web-org-42',
      tier: 'team',
      is_active: true,
      is_expired: false,
      version: 2,
      features: { api_access: true, audit_log: true, sso: false },
      seats: null,
      plan_version: 1,
    });
    expect(second.headers['webhook-id']).not.toBe(first.headers['webhook-id']);

    // An update that changes nothing the license shows (same tier, still active) is not notified.
    await send(subscriptionEvent('updated', subscription(org, PRICE_TEAM, { id: sub.id, customer: sub.customer }), { created: nowS() - 4 })).expect(200);
    expect(await outbox(org)).toHaveLength(2);
  });

  it('a webhook with a bad signature, and an event stored failed, write no message', async () => {
    const org = (await createOrganisation(t)).id;
    const event = subscriptionEvent('created', subscription(org));
    await deliver(t.app.getHttpServer(), { body: JSON.stringify(event), secret: 'whsec_wrong' }).expect(400);
    const gold = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'gold' }));
    expect((await send(gold).expect(200)).body.status).toBe('failed');
    expect(await outbox(org)).toEqual([]);
  });

  it('a receiver failing twice gets the same webhook-id until it answers 2xx; attempts are counted', async () => {
    const org = (await createOrganisation(t)).id;
    receiver.respond = (r, nth) => (r.json.data.organisation_id === org && nth <= 2 ? 500 : 200);
    await send(subscriptionEvent('created', subscription(org))).expect(200);
    await messages(org, 1);
    const tries = receiver.requests.filter((r) => r.json?.data.organisation_id === org);
    expect(tries.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(new Set(tries.map((r) => r.headers['webhook-id'])).size).toBe(1);
    // How far apart the attempts are is the schedule's (retryDelayS, tested below), not timed here: a
    // loaded machine would make any stopwatch flaky.
    expect(await deliveredRow(org)).toEqual({ status: 'delivered', attempts: 3, last_error: null });
  });

  it('a receiver that does not answer in time: the attempt ends at the timeout and is retried with the same webhook-id', async () => {
    // The timeout is 10 s (ATTEMPT_TIMEOUT_MS); shortened here so the test does not wait for it.
    const deliveries = t.app.get(NotificationDeliveryService);
    deliveries.attemptTimeoutMs = 300;
    try {
      const org = (await createOrganisation(t)).id;
      receiver.respond = (r, nth) => (r.json.data.organisation_id === org && nth === 1 ? 0 : 200);
      await send(subscriptionEvent('created', subscription(org))).expect(200);
      // Only the first attempt's limit is short: the retry (a second or more later) has the usual 10 s, so that
      // a loaded machine cannot make the answered retry time out too.
      await waitFor('the first attempt', () => receiver.requests.some((r) => r.json?.data.organisation_id === org));
      deliveries.attemptTimeoutMs = ATTEMPT_TIMEOUT_MS;
      await messages(org, 1);
      const tries = receiver.requests.filter((r) => r.json?.data.organisation_id === org);
      expect(tries.map((r) => r.status)).toEqual([0, 200]);
      expect(tries[0].headers['webhook-id']).toBe(tries[1].headers['webhook-id']);
      expect(await deliveredRow(org)).toEqual({ status: 'delivered', attempts: 2, last_error: null });
    } finally {
      deliveries.attemptTimeoutMs = ATTEMPT_TIMEOUT_MS;
    }
  });

  it('a usage report crossing into and out of at_capacity is a usage.capacity; a refused one (402) writes nothing', async () => {
    const org = (await createOrganisation(t)).id;
    await report(org, 2).expect(200);
    expect(await outbox(org)).toEqual([]);
    expect((await report(org, 1).expect(200)).body).toMatchObject({ used: 3, limit: 3, at_capacity: true });
    await report(org, 1).expect(402);
    await report(org, -1).expect(200);
    await report(org, -1).expect(200); // stays below: no crossing
    // Two messages written at once: their deliveries may arrive in either order (docs/integrating.md), so by version.
    const [into, out] = (await messages(org, 2)).sort((a, b) => a.json.data.version - b.json.data.version);
    expect(into.json).toEqual({
      type: 'usage.capacity',
      timestamp: expect.any(String),
      data: { organisation_id: org, external_id: null, tier: 'free', is_active: true, is_expired: false, version: 1, metric: 'projects', used: 3, limit: 3, at_capacity: true },
    });
    expect(out.json.data).toMatchObject({ version: 2, used: 2, limit: 3, at_capacity: false });
    expect((await outbox(org)).map((m) => m.type)).toEqual(['usage.capacity', 'usage.capacity']);
  });

  it('a grace period running out is notified once by the scheduled job (is_active: false)', async () => {
    const org = (await createOrganisation(t)).id;
    const sub = subscription(org);
    await send(subscriptionEvent('created', sub, { created: nowS() - 8 * 86_400 })).expect(200);
    // past_due since 7 days (the grace period) minus 2 s: active for 2 s more, no message now.
    const pastDue = { ...sub, status: 'past_due' };
    await send(subscriptionEvent('updated', pastDue, { created: nowS() - 7 * 86_400 + 2 })).expect(200);
    await messages(org, 1);
    const notifications = t.app.get(NotificationsService);
    expect(await notifications.graceExpiries()).toBe(0);
    // No event marks the moment; the minutely job finds it.
    await waitFor('the grace period to run out', async () => (await notifications.graceExpiries()) === 1, 6000);
    const [, expired] = await messages(org, 2);
    expect(expired.json.data).toMatchObject({ tier: 'pro', is_active: false, is_expired: true, version: 2 });
    expect(await notifications.graceExpiries()).toBe(0);
    await notifications.minutely();
    expect(await outbox(org)).toHaveLength(2);
  });

  it('a provider:sync correction is notified', async () => {
    const org = (await createOrganisation(t)).id;
    const sub = subscription(org);
    fake.addSubscription(sub);
    await send(subscriptionEvent('created', sub, { created: nowS() - 60 })).expect(200);
    await messages(org, 1);
    // The plan switch's event was lost; the provider says team now.
    fake.addSubscription({ ...subscription(org, PRICE_TEAM), id: sub.id, customer: sub.customer });
    const summary = await eventCommands['provider:sync'].run(t.app, { since: '1' }, [], t.config);
    expect(summary).toMatchObject({ subscriptions_corrected: 1 });
    const [, corrected] = await messages(org, 2);
    expect(corrected.json.data).toMatchObject({ tier: 'team', is_active: true, version: 2 });
  });

  it('notifications:list shows the outbox newest first; notifications:retry sends a message again with its webhook-id', async () => {
    const org = (await createOrganisation(t)).id;
    await send(subscriptionEvent('created', subscription(org))).expect(200);
    const [sent] = await messages(org, 1);
    const id = sent.headers['webhook-id'] as string;
    await waitFor('the delivery to be recorded', async () => (await outboxStatus(id)) === 'delivered');

    const cliEnv = { DATABASE_URL: t.databaseUrl };
    const listed = await cli(['notifications:list', '--status', 'delivered'], cliEnv, { app: t.app });
    expect(listed.code).toBe(0);
    expect(listed.json.data[0]).toEqual({
      id,
      type: 'license.updated',
      organisation_id: org,
      version: 1,
      status: 'delivered',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      body: sent.json,
      deliveries: [
        { url: receiver.url, status: 'delivered', attempts: 1, last_error: null, next_attempt_at: null, delivered_at: expect.any(String) },
      ],
    });
    expect((await cli(['notifications:list', '--status', 'failed'], cliEnv, { app: t.app })).json.data.map((m: { id: string }) => m.id)).not.toContain(id);
    expect((await cli(['notifications:list', '--status', 'nope'], cliEnv, { app: t.app })).code).toBe(2);

    const retried = await cli(['notifications:retry', '--id', id], cliEnv, { app: t.app });
    expect(retried.json).toEqual({ id, requeued: 1 });
    const audited = await t.db.query(`SELECT actor, organisation_id, after FROM audit_log WHERE action = 'notification.retried'`);
    expect(audited).toEqual([{ actor: expect.stringMatching(/^cli:.+/), organisation_id: org, after: { id, requeued: 1 } }]);
    const again = await messages(org, 2);
    expect(again[1].headers['webhook-id']).toBe(id);
    expect(again[1].body).toBe(sent.body);
    const unknown = await cli(['notifications:retry', '--id', 'msg_nope'], cliEnv, { app: t.app });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No notification with webhook-id msg_nope/);

    const metrics = await t.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/notification_deliveries_total\{outcome="delivered"\} \d+/);
    expect(metrics.text).toMatch(/notification_deliveries_pending \d+/);
  });

  const outboxStatus = async (id: string) =>
    (await t.db.query(`SELECT status FROM notification_deliveries WHERE message_id = $1`, [id]))[0]?.status;

  it('configuration: NOTIFY_URLS needs NOTIFY_SECRET, which must be whsec_ and base64; URLs must be http(s)', () => {
    const url = 'postgres://postgres@127.0.0.1/x';
    expect(() => testConfig(url, { NOTIFY_URLS: 'http://localhost:4000/hook' })).toThrow(/NOTIFY_SECRET is required when NOTIFY_URLS is set/);
    for (const bad of ['whsec_short', 'not-whsec', `whsec_${'!'.repeat(44)}`]) {
      const err = (() => {
        try {
          testConfig(url, { NOTIFY_URLS: 'http://localhost:4000/hook', NOTIFY_SECRET: bad });
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect(err!.message).toMatch(/^NOTIFY_SECRET must be "whsec_"/);
      expect(err!.message).not.toContain(bad);
    }
    expect(() => testConfig(url, { NOTIFY_URLS: 'ftp://x.example/hook?token=s3cret', NOTIFY_SECRET: secret })).toThrow(/^NOTIFY_URLS: entry 1 must be an absolute http\(s\) URL$/);
    const ok = testConfig(url, { NOTIFY_URLS: 'http://127.0.0.1:9/a, https://app.example.com/hooks', NOTIFY_SECRET: secret });
    expect(ok.notifyUrls).toEqual(['http://127.0.0.1:9/a', 'https://app.example.com/hooks']);
    expect(testConfig(url).notifyUrls).toEqual([]);
  });

  it('the retry schedule: at most 60 s apart in the first 10 minutes, then exponential, until 24 h', () => {
    expect([0, 1, 2, 4, 8, 16, 32, 64, 599].map(retryDelayS)).toEqual([1, 1, 2, 4, 8, 16, 32, 60, 60]);
    expect(retryDelayS(600)).toBe(300);
    expect(retryDelayS(3600)).toBe(1800);
    expect(retryDelayS(20 * 3600)).toBe(3 * 3600);
    expect(retryDelayS(24 * 3600)).toBeNull();
  });
});

/** Several receivers and instances on one database, and a restart with messages pending. */
describe('notifications: receivers and instances', () => {
  const secret = newNotifySecret();
  let up: NotificationReceiver;
  let down: NotificationReceiver;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    [up, down] = await Promise.all([startReceiver(secret), startReceiver(secret)]);
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.app.close().catch(() => undefined);
    await database.drop();
    await up.close();
    await down.close();
  });

  const start = async () => {
    const app = await startTestApp({ databaseUrl: database.url, env: { NOTIFY_URLS: `${up.url},${down.url}`, NOTIFY_SECRET: secret } });
    apps.push(app);
    return app;
  };
  const pending = async (app: TestApp) =>
    (await app.db.query(`SELECT count(*)::int AS n FROM notification_deliveries WHERE status = 'pending'`))[0].n as number;

  it('one receiver down: the other still gets it; after a restart a new instance delivers what was pending', async () => {
    down.respond = () => 503;
    const first = await start();
    const org = (await createOrganisation(first)).id;
    await deliver(first.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org }))).expect(200);
    await waitFor('one delivery and one failed attempt', () => up.accepted(org).length === 1 && down.requests.length >= 1);
    await first.app.close();
    apps.splice(apps.indexOf(first), 1);
    expect(await pending(await start())).toBe(1);

    down.respond = () => 200;
    const [late] = await waitFor('the pending delivery', () => down.accepted(org).length === 1 && down.accepted(org));
    expect(late.headers['webhook-id']).toBe(up.accepted(org)[0].headers['webhook-id']);
    expect(up.accepted(org)).toHaveLength(1);
  });

  it('two instances deliver each message once per URL', async () => {
    const second = await start();
    const [a, b] = apps;
    const orgs = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => createOrganisation(a, `Org ${i}`)));
    await Promise.all(
      orgs.map((o, i) =>
        deliver((i % 2 ? a : b).app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: o.id, customer: providerId('cus') }))).expect(200),
      ),
    );
    await waitFor('every delivery', async () => (await pending(second)) === 0);
    for (const receiver of [up, down]) {
      const ids = orgs.flatMap((o) => receiver.accepted(o.id).map((r) => r.headers['webhook-id']));
      expect(ids).toHaveLength(orgs.length);
      expect(new Set(ids).size).toBe(orgs.length);
    }
  });
});
