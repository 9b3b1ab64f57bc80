import { DataSource } from 'typeorm';
import { SecondConnectionRefused } from '../src/database/held-connection';
import { preparedQuery } from '../src/database/prepared';
import { transaction } from '../src/database/transaction';
import { typeOrmOptions } from '../src/database/typeorm-options';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The data layer's rule (docs/architecture.md): inside a transaction every query goes through its manager.
 * A query on the DataSource there asks the pool for a second connection while the transaction holds one;
 * under a burst every connection can be held that way, and every request then waits out the acquire
 * timeout (503). Outside production the app's pool refuses such a request at once, so a path that breaks
 * the rule fails on its first run in the tests instead of under load.
 */
describe("a transaction's work gets no second connection of the app's pool", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { DATABASE_POOL_SIZE: '2' } });
  });
  afterAll(() => t.close());

  it('refuses the DataSource, a prepared statement on it and a nested transaction at once; the transaction rolls back', async () => {
    await t.db.query('CREATE TABLE second_connection_probe (id int PRIMARY KEY)');
    const insertThen = (next: () => Promise<unknown>) =>
      transaction(t.db, async (m) => {
        await m.query('INSERT INTO second_connection_probe VALUES (1)');
        await next();
      });
    await expect(insertThen(() => t.db.query('SELECT 1'))).rejects.toThrow(SecondConnectionRefused);
    await expect(insertThen(() => t.db.manager.query('SELECT 1'))).rejects.toThrow(SecondConnectionRefused);
    await expect(insertThen(() => preparedQuery(t.db, 'SELECT 1', []))).rejects.toThrow(SecondConnectionRefused);
    await expect(insertThen(() => transaction(t.db, (m) => m.query('SELECT 1')))).rejects.toThrow(SecondConnectionRefused);
    expect(await t.db.query('SELECT count(*)::int AS n FROM second_connection_probe')).toEqual([{ n: 0 }]);
  });

  it("lets the work use its own manager, and everyone the pool once the work is done", async () => {
    const inside = await transaction(t.db, async (m) => [await m.query('SELECT 1 AS one'), await preparedQuery(m, 'SELECT 2 AS two', [])]);
    expect(inside).toEqual([[{ one: 1 }], [{ two: 2 }]]);
    // Two transactions at once on a pool of two: each holds one connection, neither is refused.
    const both = await Promise.all([1, 2].map((n) => transaction(t.db, (m) => m.query('SELECT $1::int AS n', [n]))));
    expect(both).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    let later: Promise<unknown> | undefined;
    await transaction(t.db, async () => {
      // Started by the work, run after it: the transaction no longer holds a connection then.
      later = new Promise((resolve) => setImmediate(resolve)).then(() => t.db.query('SELECT 3 AS three'));
    });
    await expect(later).resolves.toEqual([{ three: 3 }]);
  });

  it('a pool built without refuseSecondConnection (production) lends the second connection: the check is for the code, in tests and development', async () => {
    const db = await new DataSource({ ...typeOrmOptions({ url: t.databaseUrl, poolSize: 2 }), entities: [] }).initialize();
    try {
      await expect(transaction(db, async () => db.query('SELECT 1 AS one'))).resolves.toEqual([{ one: 1 }]);
    } finally {
      await db.destroy();
    }
  });
});
