import { randomBytes } from 'node:crypto';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import http from 'node:http';
import { Client } from 'pg';
import { toErrorBody } from '../src/common/error.filter';
import { transaction } from '../src/database/transaction';
import { createTestDatabase, TestDatabase } from './support/databases';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { getStatus, PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer } from './support/server-process';
import { startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'svc_terminated_key_0123456789';

interface Answer {
  status: number;
  code?: string;
}

/** One request without keep-alive; a socket error (the process gone) is an answer of status 0. */
function ask(port: number, method: string, path: string, headers: Record<string, string>, body?: object): Promise<Answer> {
  return new Promise((resolve) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      { host: '127.0.0.1', port, path, method, agent: false, headers: { ...headers, ...(data ? { 'Content-Type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode!, code });
        });
      },
    );
    req.on('error', () => resolve({ status: 0, code: 'socket error' }));
    req.end(data);
  });
}

/** Ends every connection to `database` but `direct`'s own, as a failover or an operator does. */
const terminateBackends = (direct: Client) =>
  direct.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);

describe('PostgreSQL ending the service\'s connections (a failover, a restart, pg_terminate_backend)', () => {
  describe('a transaction whose connection PostgreSQL ended between two statements', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t.close());

    it.each([
      ['a statement after it (through the manager)', 'QueryRunnerProviderAlreadyReleasedError', true],
      ['the COMMIT after it (through the runner)', 'QueryRunnerAlreadyReleasedError', false],
    ])("%s: TypeORM's %s is the database's loss, 503 database_unavailable", async (_case, name, queryAfter) => {
      const direct = new Client({ connectionString: t.databaseUrl });
      direct.on('error', () => undefined);
      await direct.connect();
      try {
        const failure = await transaction(t.db, async (m) => {
          const [{ pid }] = await m.query(`SELECT pg_backend_pid() AS pid`);
          await direct.query(`SELECT pg_terminate_backend($1)`, [pid]);
          // TypeORM releases the runner when its connection reports the error; what follows meets that.
          await waitFor('the runner released', () => m.queryRunner!.isReleased);
          if (queryAfter) await m.query('SELECT 1');
        }).catch((err: Error) => err);
        expect((failure as Error).name).toBe(name);
        expect(toErrorBody(failure)).toEqual({ statusCode: 503, error: 'Service Unavailable', code: 'database_unavailable', message: expect.any(String) });
      } finally {
        await direct.end();
      }
    });
  });

  /**
   * The built server, as production runs it (with notifications on: the job queue's pool too) and as a
   * developer runs it (no notifications): every 250 ms for 15 s, under steady traffic, PostgreSQL ends every
   * connection the service has. The process must stay up, answer only 200 or 503 database_unavailable
   * meanwhile, and serve once it stops.
   */
  describe('every 250 ms for 15 s, under traffic, on the real process', () => {
    const secret = newNotifySecret();
    let receiver: NotificationReceiver;
    const instances: { name: string; database: TestDatabase; direct: Client; server: ServerProcess }[] = [];

    beforeAll(async () => {
      receiver = await startReceiver(secret);
      const modes = {
        production: { NODE_ENV: 'production', PAYPROVIDER_SANDBOX: 'true', NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret },
        development: {},
      };
      for (const [name, env] of Object.entries(modes)) {
        const database = await createTestDatabase();
        const direct = new Client({ connectionString: database.url });
        direct.on('error', () => undefined);
        await direct.connect();
        const server = await spawnServer({
          DATABASE_URL: database.url,
          PAYPROVIDER_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64url')}`,
          SERVICE_API_KEYS: KEY,
          LOG_LEVEL: 'warn',
          ...env,
        });
        instances.push({ name, database, direct, server });
      }
      await Promise.all(instances.map((i) => i.server.healthy()));
    }, PROCESS_TEST_TIMEOUT_MS);
    afterAll(async () => {
      await Promise.all(instances.map((i) => i.server.stop()));
      for (const i of instances) {
        await i.direct.end();
        await i.database.drop();
      }
      await receiver?.close();
    }, TEARDOWN_TIMEOUT_MS);

    /** An organisation with an owner and a session, through the provisioning API. */
    async function caller(port: number) {
      const key = { 'X-Service-Key': KEY };
      const admin = async (method: string, path: string, body?: object) => {
        const res = await fetch(`http://127.0.0.1:${port}/api/admin${path}`, {
          method,
          headers: { ...key, 'Content-Type': 'application/json' },
          body: body && JSON.stringify(body),
        });
        expect(res.status).toBeLessThan(300);
        return res.json() as Promise<Record<string, string>>;
      };
      const org = await admin('POST', '/organisations', { name: 'Terminated' });
      const user = await admin('POST', '/users', { email: `owner-${org.id}@example.com` });
      await admin('PUT', `/organisations/${org.id}/members/${user.id}`, { role: 'owner' });
      const { token } = await admin('POST', '/sessions', { user_id: user.id });
      return { org: org.id, auth: { Authorization: `Bearer ${token}` }, key };
    }

    it('the process stays up, answers 200 or 503 database_unavailable meanwhile, and serves afterwards', async () => {
      const callers = await Promise.all(instances.map((i) => caller(i.server.port)));
      const pids = instances.map((i) => i.server.child.pid);
      const answers: Answer[][] = instances.map(() => []);
      let storming = true;
      const traffic = instances.flatMap((i, n) => {
        const { org, auth, key } = callers[n];
        const requests = [
          () => ask(i.server.port, 'GET', `/api/licensing/status?organisation_id=${org}`, auth),
          () => ask(i.server.port, 'POST', '/api/licensing/usage', key, { organisation_id: org, metric: 'ai_tokens', amount: 1 }),
          () => ask(i.server.port, 'GET', '/api/me', auth),
        ];
        // Four callers of each: light traffic, yet enough that an ended connection meets every state of a client.
        return [...requests, ...requests, ...requests, ...requests].map(async (request) => {
          while (storming) answers[n].push(await request());
        });
      });
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        await Promise.all(instances.map((i) => terminateBackends(i.direct)));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      storming = false;
      await Promise.all(traffic);

      for (const [n, i] of instances.entries()) {
        const outcome = `${i.name}:\n${i.server.output()}`;
        // Its output says why, when it did not (before the fix: "Unhandled 'error' event … on ClosingClient", 57P01).
        expect({ name: i.name, exitCode: i.server.child.exitCode, pid: i.server.child.pid, output: i.server.child.exitCode === null ? '' : outcome }).toEqual({
          name: i.name,
          exitCode: null,
          pid: pids[n],
          output: '',
        });
        const counts = new Map<string, number>();
        for (const a of answers[n]) counts.set(`${a.status} ${a.code ?? ''}`.trim(), (counts.get(`${a.status} ${a.code ?? ''}`.trim()) ?? 0) + 1);
        // The connections were ended under the requests (some answered 503), and nothing else went wrong.
        expect(counts.get('503 database_unavailable') ?? 0).toBeGreaterThan(0);
        expect([...counts.keys()].filter((k) => k !== '200' && k !== '503 database_unavailable')).toEqual([]);
        await waitFor(`${i.name}: healthy again`, async () => (await getStatus(i.server.port, '/api/health')) === 200, 30_000).catch((err: Error) => {
          throw new Error(`${err.message}\n${outcome}`);
        });
        const { org, auth, key } = callers[n];
        await waitFor(`${i.name}: serving again`, async () => (await ask(i.server.port, 'GET', `/api/licensing/status?organisation_id=${org}`, auth)).status === 200);
        expect((await ask(i.server.port, 'POST', '/api/licensing/usage', key, { organisation_id: org, metric: 'ai_tokens', amount: 1 })).status).toBe(200);
      }
    }, PROCESS_TEST_TIMEOUT_MS);
  });
});
