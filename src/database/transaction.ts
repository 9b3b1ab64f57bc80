import { DataSource, EntityManager } from 'typeorm';
import { whileHolding } from './held-connection';
import { poolRefusesSecondConnection, poolStatementTimeoutMs } from './typeorm-options';

/**
 * `dataSource.transaction(work)`, plus two guarantees it lacks:
 *
 * - the statement time limit, `SET LOCAL` for this transaction: a connection opened with the limit has it
 *   already (and then none is sent: `trustStartupStatementTimeout`), but behind PgBouncer in transaction mode the
 *   connection's startup parameter never reaches PostgreSQL (and a session `SET` would not survive the
 *   transaction). When the limit strikes, PostgreSQL rolls the transaction back: a request that failed because
 *   the database was slow has changed nothing.
 * - a connection that cannot even roll back (cut, or stuck past the query timeout with a statement still
 *   on the wire) is closed before it goes back to the pool, so the pool drops it instead of lending it to
 *   the next request.
 *
 * Every transaction of the service runs through here; `work` gets the transaction's EntityManager and
 * passes it down: every query of `work` goes through it, never the DataSource (outside production, the app's
 * pool refuses a second connection to `work` at once: held-connection.ts).
 */
export async function transaction<T>(db: DataSource, work: (manager: EntityManager) => Promise<T>): Promise<T> {
  const runner = db.createQueryRunner();
  const timeoutMs = poolStatementTimeoutMs(db);
  try {
    await runner.startTransaction();
    if (timeoutMs) await runner.query(`SET LOCAL statement_timeout = ${timeoutMs}`);
    // Marked only where the pool checks the mark (outside production): AsyncLocalStorage costs every
    // promise of the process something once it is in use, which production need not pay for a check it skips.
    const result = poolRefusesSecondConnection(db) ? await whileHolding(() => work(runner.manager)) : await work(runner.manager);
    await runner.commitTransaction();
    return result;
  } catch (err) {
    if (runner.isTransactionActive && !runner.isReleased) {
      await runner.rollbackTransaction().catch(async () => {
        // node-postgres: end() on a client with a hung query destroys its socket at once, and the pool
        // removes an ending client when it is released. Not awaited: a stalled socket never says goodbye.
        const client = await runner.connect();
        void client.end().catch(() => undefined);
      });
    }
    throw err;
  } finally {
    await runner.release();
  }
}
