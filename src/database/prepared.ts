import type { Pool, PoolClient } from 'pg';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Runs a hot statement as a named prepared statement straight on the pg pool (or on the connection of the
 * transaction `executor` belongs to). PostgreSQL then plans it once per connection instead of on every
 * call — measured: the licensing status statement costs ~0.8 ms unnamed and ~0.17 ms prepared — and the
 * request skips TypeORM's per-query QueryRunner. `name` must be unique to `text` across the service.
 */
export async function preparedQuery<T = any>(
  executor: DataSource | EntityManager,
  name: string,
  text: string,
  values: unknown[],
): Promise<T[]> {
  const runner = executor instanceof EntityManager ? executor.queryRunner : undefined;
  if (runner) {
    const client = (await runner.connect()) as PoolClient;
    return (await client.query({ name, text, values })).rows;
  }
  const dataSource = executor instanceof DataSource ? executor : executor.connection;
  const pool = (dataSource.driver as unknown as { master: Pool }).master;
  return (await pool.query({ name, text, values })).rows;
}
