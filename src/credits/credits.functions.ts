import { DatabaseFunction, tableFunction } from '../database/database-function';

/*
 * The credits schema's functions (migration 1764002180000-Credits.ts and later ones; the current text of each is in
 * the newest migration that defines it): which grants count and in which order they are drawn on, and the one
 * grant function. The test holds them against the database.
 */

/** The grants that count now, each with its place in the order its metric's grants are drawn on (spec §16.1). */
export const COUNTING_GRANTS = tableFunction('credits.counting_grants', 'org uuid', {
  id: 'uuid',
  metric: 'text',
  amount: 'bigint',
  remaining: 'bigint',
  category: 'text',
  priority: 'integer',
  source: 'text',
  effective_at: 'timestamp with time zone',
  expires_at: 'timestamp with time zone',
  note: 'text',
  created_at: 'timestamp with time zone',
  draw_order: 'bigint',
} as const);

export const GRANT = tableFunction(
  'credits.grant',
  'org uuid, grant_metric text, grant_amount bigint, grant_category text, grant_source text, grant_reference text, grant_priority integer, ' +
    'grant_effective_at timestamp with time zone, grant_expires_at timestamp with time zone, grant_note text, admin_request jsonb, ' +
    'ledger_reference text, urls text[]',
  { grant_id: 'uuid', created: 'boolean' } as const,
  false,
);

export const CREDITS_FUNCTIONS: DatabaseFunction[] = [COUNTING_GRANTS, GRANT];
