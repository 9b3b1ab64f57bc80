import { DatabaseFunction, tableFunction } from '../database/database-function';

/**
 * The event ledger's read for other modules (migration 1764002000000-ModuleFunctions.ts): the newest events of one
 * subscription, whatever their outcome (explain lists them). The test holds it against the database.
 */
export const WEBHOOK_FUNCTIONS: DatabaseFunction[] = [
  tableFunction('webhook.subscription_events', 'subscription text, max_rows integer', { id: 'text', type: 'text', created: 'bigint', status: 'text', reason: 'text' }),
];
