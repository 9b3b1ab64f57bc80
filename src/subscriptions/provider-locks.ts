import { EntityManager } from 'typeorm';
import { takeAdvisoryLocks } from '../database/advisory-locks';

/**
 * One customer's or subscription's changes take turns, across instances: webhook events, the reconciliation's
 * corrections and the provider's answers to changes made here each lock every provider id they touch, for the
 * rest of their transaction. Keys are taken in sorted order so two never wait on each other. What relies on
 * the locks is read in later statements than the one taking them, so that their snapshot is taken once the
 * locks are held.
 */
export function lockKeys(ids: (string | undefined)[]): string[] {
  return [...new Set(ids.filter((id): id is string => !!id))].sort().map((id) => `webhook:${id}`);
}

export async function lockProviderIds(manager: EntityManager, ids: (string | undefined)[]): Promise<void> {
  await takeAdvisoryLocks(manager, lockKeys(ids));
}
