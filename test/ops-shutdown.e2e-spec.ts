import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './support/databases';
import { ROOT } from './support/run-cli';
import { freePort } from './support/free-port';
import { waitFor } from './support/wait-for';
import { signatureHeader } from './support/webhook-signing';

// The built server, as production runs it (`npm test` builds first; alone: `npm run build`).
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const SECRET = 'whsec_shutdown_test';

interface Service {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The `time` (ms) of the server's first (or last) log line matching `msg`: the server's own clock. */
function serverClock(service: Service, msg: RegExp, which: 'first' | 'last' = 'first'): number {
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

async function startService(databaseUrl: string): Promise<Service> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'billing-shutdown-'));
  // cwd is an empty directory, so no developer .env is picked up.
  const child = spawn(process.execPath, [MAIN], {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      DATA_DIR: dataDir,
      PAYPROVIDER_WEBHOOK_SECRET: SECRET,
      LOG_LEVEL: 'info',
    },
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor('the service to become healthy', async () => {
    if (gone) throw new Error(`the service exited during start:\n${output}`);
    const res = await send(port, { path: '/api/health', agent: false });
    return res.status === 200 ? true : undefined;
  }).catch((err) => {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${output}`);
  });
  return { child, port, output: () => output, exited };
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
  const services: Service[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    admin = new Client({ connectionString: database.url });
    admin.on('error', () => undefined);
    await admin.connect();
  });
  afterAll(async () => {
    for (const s of services) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    await admin.end();
    await database.drop();
  });

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
  });

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
  });
});
