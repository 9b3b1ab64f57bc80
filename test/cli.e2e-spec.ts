import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCli } from './support/run-cli';
import { startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { freePort } from './support/free-port';

describe('operator CLI with DATABASE_URL', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestApp();
    env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
  });
  afterAll(() => t.close());

  it('creates an organisation, a user, a membership and a session the API accepts, then revokes it', async () => {
    const org = await runCli(['org:create', '--name', 'Acme Ltd'], env);
    expect(org.code).toBe(0);
    expect(org.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Acme Ltd' });
    expect(org.stdout.trim().split('\n')).toHaveLength(1);

    const user = await runCli(['user:create', '--email', 'Owner@Example.com'], env);
    expect(user.json).toEqual({ id: expect.any(String), email: 'owner@example.com' });

    const member = await runCli(['member:add', '--org', org.json.id, '--user', user.json.id, '--role', 'owner'], env);
    expect(member.json).toEqual({ organisation_id: org.json.id, user_id: user.json.id, role: 'owner' });

    const session = await runCli(['session:create', '--user', user.json.id, '--ttl', '600'], env);
    expect(session.json).toEqual({ token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String) });
    const ttl = Date.parse(session.json.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);

    const me = await t.http().get('/api/me').set('Authorization', `Bearer ${session.json.token}`).expect(200);
    expect(me.body.memberships).toEqual([{ organisation_id: org.json.id, role: 'owner' }]);

    const revoked = await runCli(['session:revoke', '--token', session.json.token], env);
    expect(revoked.json).toEqual({ revoked: true });
    await t.http().get('/api/me').set('Authorization', `Bearer ${session.json.token}`).expect(401);
  });

  it('member:add defaults to the member role', async () => {
    const org = await runCli(['org:create', '--name', 'Beta'], env);
    const user = await runCli(['user:create', '--email', `m${Date.now()}@example.com`], env);
    const member = await runCli(['member:add', '--org', org.json.id, '--user', user.json.id], env);
    expect(member.json.role).toBe('member');
  });

  it.each([
    [['nope'], /unknown command/],
    [[], /usage/],
    [['org:create'], /--name is required/],
    [['user:create', '--email', 'not-an-email'], /--email must be an email/],
    [['member:add', '--org', 'x', '--user', 'y'], /--org must be a UUID/],
    [['session:create', '--user', '00000000-0000-4000-8000-000000000000', '--ttl', '-5'], /--ttl must be/],
    [['session:revoke', '--token', 'unknown'], /no live session/],
  ])('%j fails with a message on stderr and nothing on stdout', async (args, message) => {
    const res = await runCli(args as string[], env);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message);
  });

  it('refuses a duplicate email and unknown ids', async () => {
    const email = `dup${Date.now()}@example.com`;
    expect((await runCli(['user:create', '--email', email], env)).code).toBe(0);
    const dup = await runCli(['user:create', '--email', email.toUpperCase()], env);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const missing = await runCli(
      ['member:add', '--org', '00000000-0000-4000-8000-000000000000', '--user', '00000000-0000-4000-8000-000000000000'],
      env,
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No organisation/);
  });
});

describe('operator CLI on the embedded database, with and without the server running', () => {
  let dataDir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'billing-cli-'));
    env = { DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(await freePort()), PORT: String(await freePort()) };
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps data across runs, and shares it with a running server', async () => {
    const user = await runCli(['user:create', '--email', 'solo@example.com'], env);
    expect(user.code).toBe(0);
    // A second run sees the first run's row: the embedded data persisted.
    const again = await runCli(['user:create', '--email', 'solo@example.com'], env);
    expect(again.stderr).toMatch(/already exists/);

    const server = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
      stdio: 'ignore',
    });
    try {
      const base = `http://127.0.0.1:${env.PORT}`;
      await waitFor(async () => (await fetch(`${base}/api/health`)).ok);
      const session = await runCli(['session:create', '--user', user.json.id], env);
      expect(session.code).toBe(0);
      const me = await fetch(`${base}/api/me`, { headers: { Authorization: `Bearer ${session.json.token}` } });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ id: user.json.id, email: 'solo@example.com' });
    } finally {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
  }, 90_000);

  it("says why the embedded database did not start, in PostgreSQL's own words", async () => {
    // Another program holds the port; it is not PostgreSQL, so it cannot be shared either.
    const squatter = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const own = mkdtempSync(join(tmpdir(), 'billing-cli-'));
    try {
      const port = String((squatter.address() as AddressInfo).port);
      const res = await runCli(['user:create', '--email', 'nobody@example.com'], { DATA_DIR: own, EMBEDDED_POSTGRES_PORT: port });
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/embedded PostgreSQL did not start.*could not bind.*Address already in use/);
    } finally {
      squatter.close();
      rmSync(own, { recursive: true, force: true });
    }
  }, 60_000);
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('timed out waiting for the server');
    await new Promise((r) => setTimeout(r, 200));
  }
}
