import { createHash, randomBytes } from 'node:crypto';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import http from 'node:http';
import { connect } from 'node:net';
import { Client } from 'pg';
import { createTestDatabase } from './support/databases';
import { PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer, waitFor } from './support/server-process';
import { signatureHeader } from './support/webhook-signing';

const SECRET = 'whsec_shutdown_test';

/** The `time` (ms) of the server's first (or last) log line matching `msg`: the server's own clock. */
function serverClock(service: ServerProcess, msg: RegExp, which: 'first' | 'last' = 'first'): number {
  const lines = service.output().split('\n').filter((line) => msg.test(line));
  const line = which === 'first' ? lines[0] : lines[lines.length - 1];
  if (!line) throw new Error(`the server logged no line matching ${msg}:\n${service.output()}`);
  return JSON.parse(line).time;
}

interface Reply {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

function send(port: number, opts: http.RequestOptions & { body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, ...opts }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Resolves with the connection error code, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

/** The built server on its own database, once healthy. */
async function startService(databaseUrl: string): Promise<ServerProcess> {
  const service = await spawnServer({ DATABASE_URL: databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: SECRET });
  await service.healthy().catch(async (err) => {
    await service.stop();
    throw err;
  });
  return service;
}

/** Queries of the service that are waiting for a lock in its database. */
async function blockedQueries(admin: Client, database: string): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = $1 AND application_name = 'billing-licensing-service' AND wait_event_type = 'Lock'`,
    [database],
  );
  return rows[0].n;
}

function signedEvent(id: string): { body: string; signature: string } {
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'customer.created',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object: { id: 'cus_shutdown', object: 'customer' } },
  });
  return { body, signature: signatureHeader(body, { secret: SECRET }) };
}

describe('graceful shutdown of the real process', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let admin: Client;
  const services: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    admin = new Client({ connectionString: database.url });
    admin.on('error', () => undefined);
    await admin.connect();
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await admin.end();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  it('on SIGTERM refuses new connections, finishes in-flight requests (a webhook commits, then 200), exits 0', async () => {
    const service = await startService(database.url);
    services.push(service);
    const [user] = (await admin.query(`INSERT INTO users (email) VALUES ('shutdown@example.com') RETURNING id`)).rows;
    const token = randomBytes(32).toString('base64url');
    await admin.query(`INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, now() + interval '1 hour')`, [
      createHash('sha256').update(token).digest(),
      user.id,
    ]);

    // Hold locks so that a session lookup and a webhook's ledger insert block mid-request.
    const locker = new Client({ connectionString: database.url });
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE sessions, webhook_events IN ACCESS EXCLUSIVE MODE');

    const keepAlive = new http.Agent({ keepAlive: true });
    let settled = 0;
    const me = send(service.port, { path: '/api/me', agent: keepAlive, headers: { Authorization: `Bearer ${token}` } });
    const event = signedEvent('evt_shutdown_inflight');
    const webhook = send(service.port, {
      method: 'POST',
      path: '/api/webhooks/payprovider',
      agent: keepAlive,
      headers: { 'Content-Type': 'application/json', 'Payprovider-Signature': event.signature },
      body: event.body,
    });
    void me.finally(() => settled++);
    void webhook.finally(() => settled++);
    await waitFor('both requests to block on the locks', async () => ((await blockedQueries(admin, database.name)) === 2 ? true : undefined));

    service.child.kill('SIGTERM');
    await waitFor('new connections to be refused', async () => ((await tryConnect(service.port)) === 'ECONNREFUSED' ? true : undefined));
    expect(settled).toBe(0);
    expect(service.child.exitCode).toBeNull();

    await locker.query('COMMIT');
    await locker.end();
    const [meReply, webhookReply] = await Promise.all([me, webhook]);
    expect(meReply.status).toBe(200);
    expect(meReply.body.user.id).toBe(user.id);
    expect(webhookReply.status).toBe(200);
    const stored = await admin.query(`SELECT status FROM webhook_events WHERE id = $1`, ['evt_shutdown_inflight']);
    expect(stored.rows).toHaveLength(1);

    // The keep-alive connection the replies came on is closed by the server as soon as it is idle, so the process
    // exits without waiting for Node's 5 s keep-alive timeout: measured by the server's own clock, from its last
    // "request completed" line to its "stopped" line (neither the test process nor a busy machine's process exit
    // counts), so only a wait for that timeout could reach 5 s.
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(serverClock(service, /"msg":"stopped"/) - serverClock(service, /"msg":"request completed"/, 'last')).toBeLessThan(5000);
    expect(service.output()).toMatch(/SIGTERM received/);
    expect(service.output()).toMatch(/"msg":"stopped"/);
    keepAlive.destroy();
  }, PROCESS_TEST_TIMEOUT_MS);

  it('exits 0 within a couple of seconds of SIGTERM when idle, even with an idle keep-alive connection open', async () => {
    const service = await startService(database.url);
    services.push(service);
    const keepAlive = new http.Agent({ keepAlive: true });
    expect((await send(service.port, { path: '/api/health', agent: keepAlive })).status).toBe(200);
    // Node keeps an idle keep-alive connection for 5 s; shutdown must not wait for it. Measured by the server's
    // own clock, from its "SIGTERM received" line to its "stopped" line, so neither the test process nor the
    // start and exit of a process on a busy machine count: what is left is under 5 s unless it waited.
    service.child.kill('SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(serverClock(service, /"msg":"stopped"/) - serverClock(service, /SIGTERM received/)).toBeLessThan(5000);
    keepAlive.destroy();
  }, PROCESS_TEST_TIMEOUT_MS);
});
