import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { DataSource } from 'typeorm';
import { preparedQuery } from '../src/database/prepared';
import { ClosingClient } from '../src/database/closing-client';
import { transaction } from '../src/database/transaction';
import { trustStartupStatementTimeout, typeOrmOptions } from '../src/database/typeorm-options';
import { createTestDatabase, TestDatabase } from './support/databases';
import { activePgBouncer, operatorsStatementTimeout, startPgBouncer } from './support/pgbouncer';
import { startTestApp, TestApp } from './support/test-app';

const LIMIT_MS = 500;

/**
 * DATABASE_STATEMENT_TIMEOUT_MS with the stock driver, on the app's own pool: PostgreSQL cuts a statement
 * at the limit, and what it was part of commits nothing, in a transaction (transaction.ts's SET LOCAL) and
 * outside one (the connection's startup parameter; behind PgBouncer, which drops it, the role's setting,
 * set here as the operator would). test/groups/pgbouncer.e2e-spec.ts runs this file again behind PgBouncer.
 */
describe('the statement time limit: a statement over it fails and nothing commits', () => {
  let database: TestDatabase;
  let t: TestApp;
  let admin: Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    if (activePgBouncer()) await operatorsStatementTimeout(database.name, LIMIT_MS);
    // One connection in the pool: what follows a cancelled statement runs on the connection it ran on.
    t = await startTestApp({ databaseUrl: database.url, env: { DATABASE_STATEMENT_TIMEOUT_MS: String(LIMIT_MS), DATABASE_POOL_SIZE: '1' } });
    admin = new Client({ connectionString: database.url });
    await admin.connect();
    await admin.query('CREATE TABLE timeout_probe (id int PRIMARY KEY, n int NOT NULL)');
  });
  afterAll(async () => {
    await admin.end();
    await t.close();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  const ids = async () => (await admin.query('SELECT id FROM timeout_probe ORDER BY id')).rows.map((r) => r.id);
  const cancelled = { code: '57014' }; // canceling statement due to statement timeout

  it('outside a transaction: the statement is cancelled and has written nothing', async () => {
    await expect(t.db.query('INSERT INTO timeout_probe SELECT 1, 1 FROM pg_sleep(3)')).rejects.toMatchObject(cancelled);
    await expect(preparedQuery(t.db, 'INSERT INTO timeout_probe SELECT $1::int, 1 FROM pg_sleep(3)', [2])).rejects.toMatchObject(cancelled);
    expect(await ids()).toEqual([]);
  });

  it('in a transaction: the statement is cancelled and the transaction rolled back, with what it wrote before', async () => {
    const work = transaction(t.db, async (m) => {
      await m.query('INSERT INTO timeout_probe VALUES (3, 1)');
      await preparedQuery(m, 'SELECT pg_sleep($1)', [3]);
    });
    await expect(work).rejects.toMatchObject(cancelled);
    expect(await ids()).toEqual([]);
  });

  it('a lock wait cut by the limit leaves the connection usable, in and out of a transaction', async () => {
    await admin.query('INSERT INTO timeout_probe VALUES (10, 0)');
    const bump = async (executor: Parameters<typeof preparedQuery>[0]) =>
      (await preparedQuery(executor, 'UPDATE timeout_probe SET n = n + 1 WHERE id = $1 RETURNING n', [10]))[0].n;
    await admin.query('BEGIN');
    try {
      await admin.query('SELECT n FROM timeout_probe WHERE id = 10 FOR UPDATE');
      await expect(bump(t.db)).rejects.toMatchObject(cancelled);
      await expect(transaction(t.db, bump)).rejects.toMatchObject(cancelled);
      // Nothing of the app's still waits for the lock, to commit once it goes.
      const waiting = await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      expect(waiting.rows[0].n).toBe(0);
    } finally {
      await admin.query('COMMIT');
    }
    expect(await bump(t.db)).toBe(1);
    expect(await transaction(t.db, bump)).toBe(2);
  });

  it('is in force for every statement, in a transaction and outside one', async () => {
    expect(await transaction(t.db, (m) => m.query('SHOW statement_timeout'))).toEqual([{ statement_timeout: `${LIMIT_MS}ms` }]);
    expect(await t.db.query('SHOW statement_timeout')).toEqual([{ statement_timeout: `${LIMIT_MS}ms` }]);
  });

  it('a transaction sets the limit itself only where its connection did not start with it (behind PgBouncer)', async () => {
    const marker = 'SELECT 1 AS marker';
    const sent = await statementsOf(() => transaction(t.db, (m) => m.query(marker)), marker);
    expect(sent).toEqual(['START TRANSACTION', ...(activePgBouncer() ? [`SET LOCAL statement_timeout = ${LIMIT_MS}`] : []), marker, 'COMMIT']);
  });

  it('every statement runs without JIT compilation, which made each usage report cost ~250 ms of database CPU', async () => {
    // PostgreSQL's default is on (and the servers of Debian and most managed services are built with LLVM).
    expect((await admin.query(`SELECT boot_val AS jit FROM pg_settings WHERE name = 'jit'`)).rows).toEqual([{ jit: 'on' }]);
    expect(await transaction(t.db, (m) => m.query('SHOW jit'))).toEqual([{ jit: 'off' }]);
    expect(await t.db.query('SHOW jit')).toEqual([{ jit: 'off' }]);
  });
});

/**
 * The statements (their text, in order) sent meanwhile on the connection of `db`'s that ran `marker`, the one
 * statement `work` runs in a transaction: the app's jobs may use its other connections at any moment.
 */
async function statementsOf(work: () => Promise<unknown>, marker: string): Promise<string[]> {
  const query = jest.spyOn(ClosingClient.prototype, 'query');
  try {
    await work();
    const sent = query.mock.calls.map(([config], i) => ({
      client: query.mock.contexts[i],
      text: typeof config === 'string' ? config : (config as { text: string }).text,
    }));
    const client = sent.find((s) => s.text === marker)?.client;
    return sent.filter((s) => s.client === client).map((s) => s.text);
  } finally {
    query.mockRestore();
  }
}

describe("the connection's own limit", () => {
  it("overrides the role's default (migrations, opened without one, may run as long as they need), but not through a pooler", async () => {
    const database = await createTestDatabase();
    await operatorsStatementTimeout(database.name, LIMIT_MS);
    const limitOf = async (statementTimeoutMs?: number, throughPooler?: boolean) => {
      const options = typeOrmOptions({ url: database.url, poolSize: 1, statementTimeoutMs, throughPooler });
      const db = await new DataSource({ ...options, entities: [] }).initialize();
      try {
        const outside = (await db.query('SHOW statement_timeout'))[0].statement_timeout;
        const inside = (await transaction(db, (m) => m.query('SHOW statement_timeout')))[0].statement_timeout;
        return { outside, inside };
      } finally {
        await db.destroy();
      }
    };
    try {
      expect(await limitOf()).toEqual({ outside: '0', inside: '0' });
      expect(await limitOf(700)).toEqual({ outside: '700ms', inside: '700ms' });
      // Through a pooler no startup parameter is sent (spec §1): outside a transaction the role's limit holds.
      expect(await limitOf(700, true)).toEqual({ outside: `${LIMIT_MS}ms`, inside: '700ms' });
    } finally {
      await database.drop();
    }
  });

  it('is trusted in transactions only once a connection showed it: a pooler that dropped it silently leaves them setting it', async () => {
    const database = await createTestDatabase();
    await operatorsStatementTimeout(database.name, LIMIT_MS);
    // A pooler told to ignore the startup parameters the service sends on a direct connection, which it then
    // takes for one (no DATABASE_DIRECT_URL): its connections start with the role's limit, not the service's.
    const pooler = await startPgBouncer(undefined, ['extra_float_digits', 'statement_timeout', 'options']);
    const inTransaction = async (url: string) => {
      const db = await new DataSource({ ...typeOrmOptions({ url, poolSize: 1, statementTimeoutMs: 700 }), entities: [] }).initialize();
      try {
        const trusted = await trustStartupStatementTimeout(db);
        let limit: string | undefined;
        const sent = await statementsOf(async () => {
          limit = (await transaction(db, (m) => m.query('SHOW statement_timeout')))[0].statement_timeout;
        }, 'SHOW statement_timeout');
        return { trusted, limit, setLocal: sent.filter((text) => text.startsWith('SET LOCAL')) };
      } finally {
        await db.destroy();
      }
    };
    try {
      expect(await inTransaction(database.url)).toEqual({ trusted: true, limit: '700ms', setLocal: [] });
      expect(await inTransaction(pooler.urlFor(database.url))).toEqual({
        trusted: false,
        limit: '700ms',
        setLocal: ['SET LOCAL statement_timeout = 700'],
      });
    } finally {
      await pooler.stop();
      await database.drop();
    }
  });
});
