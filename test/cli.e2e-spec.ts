import { cli, runCli } from './support/run-cli';
import { startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { freePort } from './support/free-port';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROCESS_TEST_TIMEOUT_MS, spawnServer } from './support/server-process';

/** Every command's logic, in-process (the same command line as `npm run cli`, without a process start each). */
describe('operator CLI with DATABASE_URL', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestApp();
    env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
  });
  // The commands run on the test app's own context (same database and configuration): opening one per
  // command would only repeat what the tests below the next heading show.
  const run = (args: string[]) => cli(args, env, { app: t.app });
  afterAll(() => t.close());

  it('creates an organisation, a user, a membership and a session the API accepts, then revokes it', async () => {
    const org = await run(['org:create', '--name', 'Acme Ltd']);
    expect(org.code).toBe(0);
    expect(org.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Acme Ltd' });
    expect(org.stdout.trim().split('\n')).toHaveLength(1);

    const user = await run(['user:create', '--email', 'Owner@Example.com']);
    expect(user.json).toEqual({ id: expect.any(String), email: 'owner@example.com' });

    const member = await run(['member:add', '--org', org.json.id, '--user', user.json.id, '--role', 'owner']);
    expect(member.json).toEqual({ organisation_id: org.json.id, user_id: user.json.id, role: 'owner' });

    const before = Date.now();
    const session = await run(['session:create', '--user', user.json.id, '--ttl', '600']);
    const after = Date.now();
    expect(session.json).toEqual({ token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String) });
    // 600 s from when the command ran: bounded by clock readings around it, however slow the machine is
    // (1 s either side for the database's own clock reading).
    const expiresAt = Date.parse(session.json.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(after + 600_000 + 1000);

    const me = await t.http().get('/api/me').set('Authorization', `Bearer ${session.json.token}`).expect(200);
    expect(me.body.organisations).toEqual([{ id: org.json.id, name: org.json.name, external_id: null, role: 'owner', tier: 'free' }]);

    const revoked = await run(['session:revoke', '--token', session.json.token]);
    expect(revoked.json).toEqual({ revoked: true });
    await t.http().get('/api/me').set('Authorization', `Bearer ${session.json.token}`).expect(401);
  });

  it('takes a flag value that begins with "--", as a session token (base64url) can', async () => {
    const user = await run(['user:create', '--email', `dash${Date.now()}@example.com`]);
    const token = `--${'A'.repeat(41)}`;
    await t.db.query(`INSERT INTO sessions (token_hash, user_id, expires_at) VALUES (sha256(convert_to($1, 'UTF8')), $2, now() + interval '1 hour')`, [
      token,
      user.json.id,
    ]);
    await t.http().get('/api/me').set('Authorization', `Bearer ${token}`).expect(200);
    expect((await run(['session:revoke', '--token', token])).json).toEqual({ revoked: true });
    await t.http().get('/api/me').set('Authorization', `Bearer ${token}`).expect(401);
    expect((await run(['session:revoke', '--token'])).stderr).toMatch(/--token is required/);
  });

  it('member:add defaults to the member role', async () => {
    const org = await run(['org:create', '--name', 'Beta']);
    const user = await run(['user:create', '--email', `m${Date.now()}@example.com`]);
    const member = await run(['member:add', '--org', org.json.id, '--user', user.json.id]);
    expect(member.json.role).toBe('member');
  });

  it.each([
    [['nope'], 2, /unknown command/],
    [[], 2, /usage/],
    [['org:create'], 2, /--name is required/],
    [['user:create', '--email', 'not-an-email'], 2, /--email must be an email/],
    [['member:add', '--org', 'x', '--user', 'y'], 2, /--org must be a UUID/],
    [['session:create', '--user', '00000000-0000-4000-8000-000000000000', '--ttl', '-5'], 2, /--ttl must be/],
    [['session:revoke', '--token', 'unknown'], 2, /no live session/],
  ])('%j fails with exit code %d, a message on stderr and nothing on stdout', async (args, code, message) => {
    const res = await run(args as string[]);
    expect(res.code).toBe(code);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message);
  });

  it('refuses a duplicate email and unknown ids', async () => {
    const email = `dup${Date.now()}@example.com`;
    expect((await run(['user:create', '--email', email])).code).toBe(0);
    const dup = await run(['user:create', '--email', email.toUpperCase()]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const nobody = '00000000-0000-4000-8000-000000000000';
    const missing = await run(['member:add', '--org', nobody, '--user', nobody]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No organisation/);
  });

  it('says which database it could not reach, without its password', async () => {
    const port = await freePort();
    const res = await cli(['org:create', '--name', 'X'], { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/billing` });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(new RegExp(`could not reach PostgreSQL postgres://app@127\\.0\\.0\\.1:${port}/billing \\(DATABASE_URL\\): .*ECONNREFUSED`));
    expect(res.stderr).not.toMatch(/hunter2/);
  });
});

/** The real process: what only it shows (exit codes, stdout holding exactly one JSON object and nothing else). */
describe('operator CLI as a process', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('prints one JSON object on stdout and exits 0; a usage error exits 2; a failure exits 1', async () => {
    const env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
    const closed = `postgres://postgres@127.0.0.1:${await freePort()}/x`;
    const [org, usage, unreachable] = await Promise.all([
      runCli(['org:create', '--name', 'Spawned'], env),
      runCli([], env),
      runCli(['session:revoke', '--token', 'unknown'], { ...env, DATABASE_URL: closed }),
    ]);
    expect(org).toMatchObject({ code: 0, stderr: '' });
    expect(org.stdout).toMatch(/^\{[^\n]*\}\n$/);
    expect(org.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Spawned' });
    expect(await t.db.query(`SELECT name FROM organisations WHERE id = $1`, [org.json.id])).toEqual([{ name: 'Spawned' }]);

    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect(usage.stderr).toMatch(/^usage: npm run -s cli -- <command>/);
    expect(unreachable).toMatchObject({ code: 1, stdout: '' });
    expect(unreachable.stderr).toMatch(/^error: could not reach PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:\d+\/x \(DATABASE_URL\): .*ECONNREFUSED/);
  }, 60_000);
});

describe('production without DATABASE_URL', () => {
  it('neither the server nor the CLI starts: both exit 1 naming it, and no embedded PostgreSQL is made (though the package is installed here)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'billing-production-'));
    const env = { NODE_ENV: 'production', DATA_DIR: dataDir, PAYPROVIDER_SANDBOX: 'true', PAYPROVIDER_WEBHOOK_SECRET: 'whsec_0123456789abcdef' };
    const refused = /DATABASE_URL is required when NODE_ENV=production/;
    const server = await spawnServer(env);
    expect((await server.exited).code).toBe(1);
    expect(server.output()).toMatch(refused);
    const cliRun = await runCli(['org:create', '--name', 'Nowhere'], env, { cwd: dataDir });
    expect(cliRun).toMatchObject({ code: 1, stdout: '' });
    expect(cliRun.stderr).toMatch(refused);
    expect(existsSync(join(dataDir, 'postgres'))).toBe(false);
  }, PROCESS_TEST_TIMEOUT_MS);
});
