import { Client, Query, QueryConfig } from 'pg';
import { guardedClient, StatementExtras } from '../src/database/statement-guard';
import { createTestDatabase } from './support/databases';
import { waitFor } from './support/wait-for';

/**
 * The pool's connection class (src/database/statement-guard.ts) against a real PostgreSQL: callers get
 * exactly what node-postgres would answer, while every statement carries the time limit.
 */
describe('the statement guard: a time limit on every statement, answers unchanged', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const clients: Client[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await database.drop();
  });

  const connect = async (namedStatements = true, statementTimeoutMs = 300) => {
    const GuardedClient = guardedClient({ statementTimeoutMs, namedStatements });
    const client = new GuardedClient({ connectionString: database.url });
    const notices: string[] = [];
    client.on('notice', (n) => notices.push(n.message ?? ''));
    await client.connect();
    clients.push(client);
    return { client, notices };
  };
  const observer = async () => {
    const client = new Client({ connectionString: database.url });
    await client.connect();
    clients.push(client);
    return client;
  };
  // What the server says the guarded connection is doing ('idle', 'idle in transaction', 'active').
  const stateOf = async (watcher: Client, watched: Client) =>
    (await watcher.query('SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = $1', [(watched as unknown as { processID: number }).processID]))
      .rows[0] as { state: string; wait_event_type: string | null };
  // A statement with what the guard may send along with it (preparedQuery passes the same).
  const withExtras = (config: QueryConfig & StatementExtras) => config as QueryConfig;
  const prepared = async (client: Client) =>
    (await client.query('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);

  it('answers as node-postgres does: rows, fields, command, rowCount, row mode, several results, callbacks', async () => {
    const { client, notices } = await connect();
    const one = await client.query('SELECT 1 AS x');
    expect(one).toMatchObject({ command: 'SELECT', rowCount: 1, rows: [{ x: 1 }] });
    expect(one.fields.map((f) => f.name)).toEqual(['x']);
    expect((await client.query('SELECT $1::int + 1 AS y', [1])).rows).toEqual([{ y: 2 }]);
    expect((await client.query({ text: 'SELECT $1::int AS a, 2 AS b', values: [1], rowMode: 'array' })).rows).toEqual([[1, 2]]);
    const many = (await client.query('SELECT 1 AS a; SELECT 2 AS b')) as unknown as { rows: unknown[] }[];
    expect(many.map((r) => r.rows)).toEqual([[{ a: 1 }], [{ b: 2 }]]);
    await client.query('CREATE TABLE t (a int)');
    await client.query('INSERT INTO t VALUES (1), (2)');
    expect(await client.query('UPDATE t SET a = a + $1', [1])).toMatchObject({ command: 'UPDATE', rowCount: 2 });
    expect((await client.query('SELECT 1 WHERE false')).rows).toEqual([]);
    const viaCallback = await new Promise((resolve, reject) =>
      client.query('SELECT $1::text AS c', ['cb'], (err, res) => (err ? reject(err) : resolve(res.rows))),
    );
    expect(viaCallback).toEqual([{ c: 'cb' }]);
    await expect(client.query('SELECT 1 / 0')).rejects.toMatchObject({ code: '22012' });
    expect((await client.query('SELECT 3 AS z')).rows).toEqual([{ z: 3 }]);
    // set_config, unlike SET LOCAL, never warns outside a transaction block (a warning would go to the server log).
    expect(notices).toEqual([]);
  });

  it('limits every statement, alone or in a transaction (also with an isolation level), never the session', async () => {
    const { client } = await connect();
    await expect(client.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
    await expect(client.query('SELECT pg_sleep($1)', [2])).rejects.toMatchObject({ code: '57014' });
    await client.query('START TRANSACTION');
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    expect((await client.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('300ms');
    await expect(client.query('SELECT pg_sleep($1)', [2])).rejects.toMatchObject({ code: '57014' });
    await client.query('ROLLBACK');
    // The session keeps the server's default: a pg Query object goes out as it is, with no setting added.
    const session = await new Promise<string>((resolve, reject) =>
      client.query(
        new Query('SHOW statement_timeout', undefined, (err: Error | undefined, res: { rows: { statement_timeout: string }[] }) =>
          err ? reject(err) : resolve(res.rows[0].statement_timeout),
        ),
      ),
    );
    expect(session).toBe('0');
  });

  it('named statements stay named (the setting too, parsed once), or go unnamed when they must', async () => {
    const named = (await connect(true)).client;
    await named.query({ name: 'probe', text: 'SELECT $1::int AS n', values: [1] });
    await named.query({ name: 'probe', text: 'SELECT $1::int AS n', values: [2] });
    expect(await prepared(named)).toEqual(['probe', 'statement_timeout_setting']);

    const unnamed = (await connect(false)).client;
    expect((await unnamed.query({ name: 'probe', text: 'SELECT $1::int AS n', values: [3] })).rows).toEqual([{ n: 3 }]);
    expect(await prepared(unnamed)).toEqual([]);
  });

  it('sends nothing more when the limit is off (the migrations)', async () => {
    const { client } = await connect(true, 0);
    expect((await client.query('SELECT pg_sleep(0.4), 1 AS done')).rows[0].done).toBe(1);
    expect((await client.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('0');
  });

  it('sends a BEGIN with the first statement of its transaction, and nothing for a transaction that sent none', async () => {
    const { client, notices } = await connect();
    const watcher = await observer();
    expect(await client.query('BEGIN')).toMatchObject({ command: 'BEGIN', rows: [] });
    expect((await stateOf(watcher, client)).state).toBe('idle');
    expect((await client.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('300ms');
    expect((await stateOf(watcher, client)).state).toBe('idle in transaction');
    await client.query('COMMIT');
    expect((await stateOf(watcher, client)).state).toBe('idle');
    await client.query('START TRANSACTION');
    expect(await client.query('ROLLBACK')).toMatchObject({ command: 'ROLLBACK' });
    await client.query('BEGIN');
    await client.query('COMMIT');
    expect((await stateOf(watcher, client)).state).toBe('idle');
    // A COMMIT outside a transaction is still the server's to answer (it warns).
    await client.query('COMMIT');
    expect(notices).toEqual(['there is no transaction in progress']);
  });

  it('sends a held BEGIN first, with the time limit, when a ready-made query object follows it', async () => {
    const { client } = await connect();
    const watcher = await observer();
    await client.query('BEGIN');
    const timeout = await new Promise<string>((resolve, reject) =>
      client.query(
        new Query('SHOW statement_timeout', undefined, (err: Error | undefined, res: { rows: { statement_timeout: string }[] }) =>
          err ? reject(err) : resolve(res.rows[0].statement_timeout),
        ),
      ),
    );
    expect(timeout).toBe('300ms');
    expect((await stateOf(watcher, client)).state).toBe('idle in transaction');
    await client.query('ROLLBACK');
    expect((await stateOf(watcher, client)).state).toBe('idle');
  });

  it('commits with a statement (`commit`): visible at once, the COMMIT that follows sends nothing, a failure commits nothing', async () => {
    const { client, notices } = await connect();
    const watcher = await observer();
    await client.query('CREATE TABLE c (a int PRIMARY KEY, b int UNIQUE DEFERRABLE INITIALLY DEFERRED)');
    const insert = (a: number, b: number, commit?: boolean) =>
      client.query(withExtras({ name: 'insert_c', text: 'INSERT INTO c VALUES ($1, $2) RETURNING a', values: [a, b], commit }));
    const rowsSeen = async () => (await watcher.query('SELECT a FROM c ORDER BY a')).rows.map((r) => r.a);

    await client.query('BEGIN');
    await insert(1, 1);
    expect((await insert(2, 2, true)).rows).toEqual([{ a: 2 }]);
    expect(await rowsSeen()).toEqual([1, 2]);
    expect((await stateOf(watcher, client)).state).toBe('idle');
    expect(await client.query('COMMIT')).toMatchObject({ command: 'COMMIT' });
    expect(notices).toEqual([]);

    // The statement fails: its COMMIT never runs, the transaction rolls back.
    await client.query('BEGIN');
    await insert(3, 3);
    await expect(insert(1, 4, true)).rejects.toMatchObject({ code: '23505', constraint: 'c_pkey' });
    await client.query('ROLLBACK');
    // The COMMIT fails (a deferred unique check): the caller hears it, nothing is committed.
    await client.query('BEGIN');
    await insert(5, 5);
    await expect(insert(6, 5, true)).rejects.toMatchObject({ code: '23505', constraint: 'c_b_key' });
    await client.query('ROLLBACK');
    expect(await rowsSeen()).toEqual([1, 2]);
    expect((await stateOf(watcher, client)).state).toBe('idle');
  });

  it('runs `before` statements first in the same round trip, each in its own snapshot', async () => {
    const { client } = await connect(true, 2000);
    const holder = await observer();
    const watcher = await observer();
    await holder.query('CREATE TABLE seen (a int)');
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(42)');
    await holder.query('INSERT INTO seen VALUES (1)');

    await client.query('BEGIN');
    const counted = client.query(
      withExtras({
        name: 'count_seen',
        text: 'SELECT count(*)::int AS n FROM seen',
        values: [],
        before: [{ text: 'SELECT pg_advisory_xact_lock($1)', values: [42], name: 'lock_42' }],
      }),
    );
    await waitFor('the guarded connection waiting for the lock', async () => (await stateOf(watcher, client)).wait_event_type === 'Lock');
    await holder.query('COMMIT');
    // The count's snapshot was taken once the lock was held: it sees what the holder committed meanwhile.
    expect((await counted).rows).toEqual([{ n: 1 }]);
    await client.query('COMMIT');
    expect(await prepared(client)).toEqual(expect.arrayContaining(['count_seen', 'lock_42']));
  });

  it('leaves nothing half-prepared when a `before` statement fails (the statements behind it were never parsed)', async () => {
    const { client } = await connect(true, 300);
    const holder = await observer();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(43)');
    const query = () =>
      client.query(
        withExtras({
          name: 'after_lock_43',
          text: 'SELECT $1::int AS n',
          values: [7],
          before: [{ text: 'SELECT pg_advisory_xact_lock($1)', values: [43], name: 'lock_43' }],
        }),
      );
    await client.query('BEGIN');
    await expect(query()).rejects.toMatchObject({ code: '57014' });
    await client.query('ROLLBACK');
    expect(await prepared(client)).toEqual(expect.arrayContaining(['lock_43']));
    expect(await prepared(client)).not.toContain('after_lock_43');
    await holder.query('COMMIT');
    await client.query('BEGIN');
    expect((await query()).rows).toEqual([{ n: 7 }]);
    await client.query('COMMIT');
  });
});
