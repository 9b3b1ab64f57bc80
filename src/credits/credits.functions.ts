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

/** The live holds of an organisation's metric (spec §16.5: a hold stops counting at its expiry, with no job). */
export const LIVE_HOLDS = tableFunction('credits.live_holds', 'org uuid, metric_name text', { id: 'uuid', amount: 'bigint', expires_at: 'timestamp with time zone' } as const);

/*
 * What licensing's usage write hands to credits in its one statement (migration 1764002200000-CreditConsumption.ts):
 * a reservation to commit, the room of a counter (fresh, grants locked), the consumption of grants, new holds and
 * commits.
 */
export const CREDITS_FUNCTIONS: DatabaseFunction[] = [
  COUNTING_GRANTS,
  GRANT,
  LIVE_HOLDS,
  tableFunction('credits.reservation', 'reservation_id uuid', {
    organisation_id: 'uuid',
    metric: 'text',
    amount: 'bigint',
    expires_at: 'timestamp with time zone',
    status: 'text',
    spent: 'bigint',
    response: 'jsonb',
  }),
  tableFunction('credits.room', 'org uuid, metric_name text, with_balance boolean, commits uuid[]', { held: 'bigint', balance: 'bigint', live: 'uuid[]' }, false),
  { name: 'credits.consume', arguments: 'orgs uuid[], metrics text[], draws bigint[], refs text[]', returns: 'integer', inlined: false, genericPlans: true },
  {
    name: 'credits.hold',
    arguments: 'ids uuid[], orgs uuid[], metrics text[], amounts bigint[], expires timestamp with time zone[]',
    returns: 'integer',
    inlined: false,
    genericPlans: true,
  },
  {
    name: 'credits.settle_commits',
    arguments: 'ids uuid[], spent bigint[], responses jsonb[], released bigint[], balances bigint[]',
    returns: 'integer',
    inlined: false,
    genericPlans: true,
  },
  // The threshold of an organisation's enabled automatic top-up of a metric, the low threshold of credits.low (migration SpendAlerts).
  tableFunction('credits.recharge_threshold', 'org uuid, metric_name text', { threshold: 'bigint' }),
  // An organisation's rollover grants of its current period (its text: migration 1764002420000-RolloverOnPlanVersion.ts).
  { name: 'credits.roll_over', arguments: 'org uuid, tiers jsonb, grace_s bigint, urls text[]', returns: 'integer', inlined: false },
];
