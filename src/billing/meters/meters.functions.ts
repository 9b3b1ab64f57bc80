import { DatabaseFunction } from '../../database/database-function';

/**
 * Billing's database function (migration 1764002000000-ModuleFunctions.ts): how licensing's usage write hands its
 * accepted usage, in its one statement, to the meter windows (spec §13). The test holds it against the database.
 */
export const BILLING_FUNCTIONS: DatabaseFunction[] = [
  {
    name: 'billing.meter_usage',
    arguments: 'orgs uuid[], metrics text[], amounts bigint[], metered text[], flush_s integer',
    returns: 'integer',
    inlined: false,
    genericPlans: true,
  },
];
