import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { MIGRATION_LOCK } from '../src/database/migrate';
import { createTestDatabase, migrationLockWaiters } from './support/databases';
import { getStatus, PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer, START_TIMEOUT_MS, waitFor } from './support/server-process';

const SECRET = 'whsec_migration_lock_test';

describe('a start that finds another instance migrating', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let locker: Client;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    locker = new Client({ connectionString: database.url });
    locker.on('error', () => undefined);
    await locker.connect();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await locker.end();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  const start = async (env: Record<string, string>) => {
    const server = await spawnServer({ DATABASE_URL: database.url, PAYPROVIDER_WEBHOOK_SECRET: SECRET, ...env });
    servers.push(server);
    return server;
  };

  it('waits for the lock, saying so and who holds it, and starts once it is released', async () => {
    await locker.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const server = await start({ MIGRATION_LOCK_TIMEOUT_S: '120' });
    // A wait, not a measure: the process's start reaches the lock after loading its modules (over 20 s at load 20+).
    const queued = await waitFor(
      'the start to queue for the migration lock',
      async () => (server.child.exitCode !== null ? 'exited' : (await migrationLockWaiters(locker)).length === 1 ? 'queued' : undefined),
      START_TIMEOUT_MS,
    );
    if (queued === 'exited') throw new Error(`the start exited instead of waiting:\n${server.output()}`);
    const { rows } = await locker.query('SELECT pg_backend_pid() AS pid');
    await waitFor('the log to say it waits', async () =>
      new RegExp(
        `another instance is applying migrations \\(backend pid ${rows[0].pid}\\b.*\\): waiting up to 120 s for pg_advisory_lock\\(7236001\\)`,
      ).test(server.output()) || undefined,
      START_TIMEOUT_MS,
    );
    // Not failed, and not serving either: health only answers once migrations are applied.
    expect(server.child.exitCode).toBeNull();
    await expect(getStatus(server.port, '/api/health')).rejects.toThrow(/ECONNREFUSED/);

    await locker.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    await server.healthy();
    expect(server.output()).toMatch(/pg_advisory_lock\(7236001\) acquired after/);
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  }, PROCESS_TEST_TIMEOUT_MS);

  it('gives up after MIGRATION_LOCK_TIMEOUT_S with a message naming the lock and its holder, exit 1', async () => {
    await locker.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const server = await start({ MIGRATION_LOCK_TIMEOUT_S: '1' });
      expect(await server.exited).toEqual({ code: 1, signal: null });
      expect(server.output()).toMatch(
        /gave up after 1 s \(MIGRATION_LOCK_TIMEOUT_S\) waiting for pg_advisory_lock\(7236001\), held by backend pid \d+/,
      );
    } finally {
      await locker.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
