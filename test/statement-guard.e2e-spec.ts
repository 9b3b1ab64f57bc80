import { Client, Query } from 'pg';
import { guardedClient } from '../src/database/statement-guard';
import { createTestDatabase } from './support/databases';

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
});
