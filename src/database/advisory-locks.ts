import { EntityManager } from 'typeorm';
import { preparedQuery } from './prepared';

/**
 * Takes the transaction-scoped advisory lock of each key, in the order given (unnest's order): callers sort
 * the keys, so two transactions never wait on each other.
 */
export async function takeAdvisoryLocks(manager: EntityManager, keys: string[]): Promise<void> {
  if (!keys.length) return;
  await preparedQuery(manager, `SELECT count(pg_advisory_xact_lock(hashtextextended(key, 0))) AS locks FROM unnest($1::text[]) AS key`, [keys]);
}
