import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { NotificationDeliveryService } from '../src/notifications/notification-delivery.service';
import { createTestDatabase, TestDatabase } from './support/databases';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { subscriptionEvent, subscriptionObject } from './support/provider-events';
import { getStatus, PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer } from './support/server-process';
import { startTcpProxy } from './support/tcp-proxy';
import { createOrganisation, createUserWithSession, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

type Proxy = Awaited<ReturnType<typeof startTcpProxy>>;
const KEY = 'svc_resilience_key';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What every route answers while the database cannot be reached: 503 in the shared shape, with a request id. */
function expectUnavailable(res: { status: number; body: unknown; headers: Record<string, string> }, code = 'database_unavailable') {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 503,
    body: { statusCode: 503, error: 'Service Unavailable', code, message: expect.any(String) },
  });
  expect(res.headers['x-request-id']).toEqual(expect.any(String));
  expect(JSON.stringify(res.body)).not.toMatch(/ECONN|postgres|terminat|timeout exceeded/i);
}

describe('the database going away', () => {
  describe('every route answers 503 database_unavailable and commits nothing', () => {
    let t: TestApp;
    let proxy: Proxy;
    let database: TestDatabase;
    let direct: Client;

    beforeAll(async () => {
      database = await createTestDatabase();
      proxy = await startTcpProxy(database.url);
      t = await startTestApp({ databaseUrl: proxy.url, env: { SERVICE_API_KEYS: KEY, DATABASE_STATEMENT_TIMEOUT_MS: '800', DATABASE_QUERY_TIMEOUT_MS: '1000' } });
      direct = new Client({ connectionString: database.url });
      direct.on('error', () => undefined);
      await direct.connect();
    });
    afterEach(() => proxy.restore());
    afterAll(async () => {
      proxy.restore();
      await direct.end();
      await t.close();
      await proxy.close();
      await database.drop();
    }, TEARDOWN_TIMEOUT_MS);

    it.each([
      ['cut', '(connections reset, new ones refused)', () => proxy.cut()],
      ['stalled', '(connections accepted, never answered)', () => proxy.stall()],
    ])('database %s %s', async (_kind, _how, fail) => {
      const org = (await createOrganisation(t)).id;
      const member = await createUserWithSession(t, { org, role: 'owner' });
      const key = { 'X-Service-Key': KEY };
      const externalId = `outage_${org}`;
      const status = () => t.http().get('/api/licensing/status').query({ organisation_id: org }).set(member.auth);
      // Connections open in the pool when it happens: the requests below meet those as well as new ones.
      await Promise.all(Array.from({ length: 8 }, () => status().expect(200)));
      fail();
      const answers = await Promise.all([
        status(),
        t.http().get('/api/me').set(member.auth),
        t.http().get('/api/billing/history').query({ organisation_id: org }).set(member.auth),
        t.http().get('/api/licensing/check').query({ organisation_id: org, metric: 'projects', amount: 1 }).set(key),
        t.http().post('/api/licensing/usage').set(key).send({ organisation_id: org, metric: 'projects', amount: 1 }),
        t.http().get(`/api/admin/organisations/${org}`).set(key),
        t.http().post('/api/admin/organisations').set(key).send({ name: 'During the outage', external_id: externalId }),
      ]);
      for (const res of answers) expectUnavailable(res);
      // The webhook keeps its own code: the provider retries the event.
      expectUnavailable(await deliver(t.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org }))), 'event_not_stored');

      proxy.restore();
      const { rows } = await direct.query(
        `SELECT (SELECT count(*) FROM usage_counters WHERE organisation_id = $1)::int AS usage,
                (SELECT count(*) FROM organisations WHERE external_id = $2)::int AS organisations,
                (SELECT count(*) FROM webhook_events WHERE organisation_id = $1)::int AS events`,
        [org, externalId],
      );
      expect(rows[0]).toEqual({ usage: 0, organisations: 0, events: 0 });
      // And the same routes work again once it is back: the pool replaces its broken connections, including the
      // stalled ones (the proxy never resumes them, as a path that silently dropped them would not).
      await waitFor('the status read to work again', async () => (await status()).status === 200);
      await t.http().get('/api/me').set(member.auth).expect(200);
    }, 60_000);
  });

  /**
   * The built server, as production runs it, with notifications on (the job queue, its LISTEN and its minutely
   * cron): the database is cut (or stalled) across a minute boundary, when graphile's cron schedules its job.
   * Two servers, each on its own database and proxy, share the one boundary so the test waits for one minute
   * at most.
   */
  describe('background work with notifications on', () => {
    const secret = newNotifySecret();
    let receiver: NotificationReceiver;
    const instances: { kind: 'cut' | 'stall'; database: TestDatabase; proxy: Proxy; direct: Client; server: ServerProcess }[] = [];

    beforeAll(async () => {
      receiver = await startReceiver(secret);
      for (const kind of ['cut', 'stall'] as const) {
        const database = await createTestDatabase();
        const proxy = await startTcpProxy(database.url);
        const direct = new Client({ connectionString: database.url });
        direct.on('error', () => undefined);
        await direct.connect();
        const server = await spawnServer({
          DATABASE_URL: proxy.url,
          PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
          NOTIFY_URLS: receiver.url,
          NOTIFY_SECRET: secret,
          LOG_LEVEL: 'info',
        });
        instances.push({ kind, database, proxy, direct, server });
      }
      await Promise.all(instances.map((i) => i.server.healthy()));
    }, PROCESS_TEST_TIMEOUT_MS);
    afterAll(async () => {
      await Promise.all(instances.map((i) => i.server.stop()));
      for (const i of instances) {
        await i.direct.end();
        await i.proxy.close();
        await i.database.drop();
      }
      await receiver.close();
    }, TEARDOWN_TIMEOUT_MS);

    /** A license change written through the webhook; resolves once its notification reached the receiver. */
    async function notifiedAfterwards(i: (typeof instances)[number]) {
      const { rows } = await i.direct.query(`INSERT INTO organisations (name) VALUES ('after the outage') RETURNING id`);
      const org = rows[0].id as string;
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: org }));
      // The first requests after the outage may still meet a broken pooled connection.
      await waitFor('the webhook to be accepted', async () => (await deliver(`http://127.0.0.1:${i.server.port}`, event)).status === 200);
      return waitFor(`the notification of ${i.kind}`, () => receiver.accepted(org)[0], 30_000);
    }

    it('the same processes serve afterwards and deliver a notification written after it', async () => {
      const pids = instances.map((i) => i.server.child.pid);
      // Both outages span the next minute boundary at least 3 s away (graphile's cron runs on the minute). The
      // stall lasts past the queue's 5 s connection timeout and 10 s query timeout, so that it fails the cron too.
      const boundary = Math.ceil((Date.now() + 3000) / 60_000) * 60_000;
      const cut = instances.find((i) => i.kind === 'cut')!.proxy;
      const stalled = instances.find((i) => i.kind === 'stall')!.proxy;
      await sleep(boundary - 1500 - Date.now());
      cut.cut();
      stalled.stall();
      await sleep(boundary + 3000 - Date.now());
      cut.restore();
      await sleep(boundary + 12_000 - Date.now());
      stalled.restore();

      for (const i of instances) {
        await waitFor(`${i.kind}: healthy again`, async () => (await getStatus(i.server.port, '/api/health')) === 200, 30_000).catch((err: Error) => {
          throw new Error(`${err.message}\n${i.server.output()}`);
        });
        const notification = await notifiedAfterwards(i);
        expect(notification.json.type).toBe('license.updated');
      }
      expect(instances.map((i) => i.server.child.exitCode)).toEqual([null, null]);
      expect(instances.map((i) => i.server.child.pid)).toEqual(pids);
      // The outage did meet the cron's minute (graphile logs its retry), so the test shows what it claims.
      for (const i of instances) expect(i.server.output()).toContain('Cron hit an error');
    }, 150_000);

    it('a delivery whose outcome could not be written (the database cut mid-attempt) is sent again once it is back', async () => {
      const database = await createTestDatabase();
      const proxy = await startTcpProxy(database.url);
      const logLines: string[] = [];
      const env = { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret, DATABASE_STATEMENT_TIMEOUT_MS: '800', DATABASE_QUERY_TIMEOUT_MS: '1000' };
      const t = await startTestApp({ databaseUrl: proxy.url, env, logLines });
      const logged = (text: string) => logLines.some((line) => line.includes(text));
      try {
        t.app.get(NotificationDeliveryService).attemptTimeoutMs = 1000;
        const org = (await createOrganisation(t)).id;
        // The first attempt gets no answer; the database is cut while it waits, so neither the failed attempt
        // nor graphile's release of the job can be written: that worker stops, and with it the runner.
        receiver.respond = (r, nth) => (r.json.data.organisation_id === org && nth === 1 ? 0 : 200);
        await deliver(t.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org }))).expect(200);
        await waitFor('the first attempt', () => receiver.requests.some((r) => r.json?.data.organisation_id === org));
        proxy.cut();
        const withLog = (err: Error) => Promise.reject(new Error(`${err.message}\n${logLines.join('')}`));
        await waitFor('the job queue to stop', () => logged('restarting it once the database answers')).catch(withLog);
        proxy.restore();
        await waitFor('the job queue to restart', () => logged('job queue restarted')).catch(withLog);
        // Sent again at once (not after graphile's 4-hour lock): its lock was released with the restart.
        const [again] = await waitFor('the second attempt, accepted', () => receiver.accepted(org).length > 0 && receiver.accepted(org));
        expect(again.json.type).toBe('license.updated');
      } finally {
        proxy.restore();
        await t.close();
        await proxy.close();
        await database.drop();
      }
    }, 60_000);
  });
});
