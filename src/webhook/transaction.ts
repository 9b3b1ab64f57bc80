import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { statementName } from '../database/prepared';

/** Runs one statement in the current transaction and returns its rows (RETURNING rows for writes). */
export type Sql = <T = Record<string, any>>(text: string, params?: unknown[]) => Promise<T[]>;

interface PgClient {
  query(text: string | { name: string; text: string; values?: unknown[] }, params?: unknown[]): Promise<{ rows: any[] }>;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeListener(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * One READ COMMITTED transaction on a pooled connection. Unlike TypeORM's query runner, a connection
 * that cannot even roll back (cut, or stuck past the query timeout) is handed back to the pool with the
 * error, so the pool drops it instead of giving it to the next request.
 */
export async function transaction<T>(db: DataSource, work: (sql: Sql) => Promise<T>): Promise<T> {
  const [client, release] = (await (db.driver as PostgresDriver).obtainMasterConnection()) as [
    PgClient,
    (err?: Error) => void,
  ];
  // A checked-out client reports a dropped socket as an 'error' event: without a listener that would
  // crash the process. Remember it instead, so the client is not reused.
  let broken: Error | undefined;
  const onError = (err: Error) => (broken = err);
  client.on('error', onError);
  const done = (err?: Error) => {
    client.removeListener('error', onError);
    release(err);
  };
  // Every statement here is a fixed text: prepared once per connection, not planned on every event.
  const sql: Sql = async (text, params) => (await client.query({ name: statementName(text), text, values: params })).rows;
  try {
    await client.query('BEGIN');
    const result = await work(sql);
    await client.query('COMMIT');
    done(broken);
    return result;
  } catch (err) {
    const rolledBack =
      !broken &&
      (await client.query('ROLLBACK').then(
        () => true,
        () => false,
      ));
    done(rolledBack ? undefined : (broken ?? (err as Error)));
    throw err;
  }
}
