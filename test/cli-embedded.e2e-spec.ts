import { ChildProcess, spawn } from 'node:child_process';
import { stopProcess, TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, ROOT, runCli } from './support/run-cli';
import { freePort } from './support/free-port';

/**
 * The embedded database of a folder, as a newcomer meets it: `npm start` in one terminal (here with a port of
 * its own), `npm run cli` in another with no environment at all, while the server runs and after it stopped.
 */
describe('operator CLI on the embedded database, with and without the server running', () => {
  let folder: string;
  let server: ChildProcess | undefined;
  let port: number;
  let pgPort: number;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'billing-cli-'));
    [port, pgPort] = [await freePort(), await freePort()];
  });
  afterAll(async () => {
    await stop(server);
    rmSync(folder, { recursive: true, force: true });
  }, TEARDOWN_TIMEOUT_MS);

  // Run in the folder itself, so DATA_DIR is its .data, exactly as for `npm start` and `npm run cli` there.
  const inFolder = (args: string[]) => runCli(args, {}, { cwd: folder });

  it('finds the server’s database with no variable while it runs, and starts it itself once it stopped', async () => {
    server = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
      cwd: folder,
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', PORT: String(port), EMBEDDED_POSTGRES_PORT: String(pgPort) },
      stdio: 'ignore',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/api/health`)).ok, () => server?.exitCode != null);
    expect(readFileSync(join(folder, '.data', 'postgres.port'), 'utf8').trim()).toBe(String(pgPort));

    // While it runs: the CLI, with no variable at all, shares the server's database (found through the data
    // folder). The session for the new user is made in-process on that same database: the API accepts it.
    const user = await inFolder(['user:create', '--email', 'solo@example.com']);
    expect(user).toMatchObject({ code: 0, stderr: '' });
    expect(user.stdout).toMatch(/^\{[^\n]*\}\n$/);
    const embeddedUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/billing`;
    const session = await cli(['session:create', '--user', user.json.id], { DATABASE_URL: embeddedUrl });
    expect(session.code).toBe(0);
    const me = await fetch(`${base}/api/me`, { headers: { Authorization: `Bearer ${session.json.token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ user: { id: user.json.id, email: 'solo@example.com' } });

    // Stopped: the CLI starts the same data on the recorded port, finds the session made while the server
    // ran (the data persisted), and stops the database again (the next test starts it on another port).
    await stop(server);
    server = undefined;
    const revoked = await inFolder(['session:revoke', '--token', session.json.token]);
    expect(revoked).toMatchObject({ code: 0, stdout: '{"revoked":true}\n' });
    // A wait, not a measure: initdb, two starts of PostgreSQL and four Node processes took over 90 s on a loaded
    // 2-core machine.
  }, 180_000);

  it("says why the embedded database did not start, in PostgreSQL's own words", async () => {
    // Another program holds the port; it is not PostgreSQL, so it cannot be shared either.
    const squatter = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    try {
      const taken = String((squatter.address() as AddressInfo).port);
      const res = await runCli(['user:create', '--email', 'nobody@example.com'], { EMBEDDED_POSTGRES_PORT: taken }, { cwd: folder });
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(
        new RegExp(`embedded PostgreSQL did not start on 127\\.0\\.0\\.1:${taken} \\(EMBEDDED_POSTGRES_PORT; data in .*\\):.*could not bind.*Address already in use`),
      );
    } finally {
      squatter.close();
    }
  }, 60_000);
});

/** SIGTERM, with a long grace: the server stops its embedded PostgreSQL on the way out (a SIGKILL would orphan it). */
async function stop(child: ChildProcess | undefined) {
  if (child) await stopProcess(child, { graceMs: 60_000 });
}

/** Polls until `check` passes; fails at once when `gaveUp` says the process it waits for has exited. */
async function waitFor(check: () => Promise<boolean>, gaveUp: () => boolean) {
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    if (gaveUp()) throw new Error('the server exited before it answered');
    await new Promise((r) => setTimeout(r, 200));
  }
}
