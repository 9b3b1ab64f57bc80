import { DatabaseFunction, tableFunction } from '../database/database-function';

/**
 * Identity's reads as database functions (migration 1764002000000-ModuleFunctions.ts), for the statements of
 * other modules that answer in one round trip: they call these by name instead of reading organisations,
 * memberships and sessions themselves. The test holds them against the database.
 */
export const IDENTITY_FUNCTIONS: DatabaseFunction[] = [
  tableFunction('identity.organisation', 'org uuid', { id: 'uuid', external_id: 'text', provider_customer_id: 'text' }),
  tableFunction('identity.members', 'org uuid', { user_id: 'uuid', role: 'text' }),
  /** The one definition of a live session: its user, zero or one row. */
  tableFunction('identity.live_session', 'token bytea', { user_id: 'uuid' }),
  /**
   * Whether a caller may read the organisation: a session token not yet verified (its SHA-256: a live session of a
   * member), a verified user (a member), or a trusted back-end (both NULL: the organisation exists); and the
   * caller's role there (NULL: a trusted back-end, or not a member). One row (migration AccessRole).
   */
  tableFunction('identity.access', 'org uuid, caller_user uuid, caller_token bytea', { authenticated: 'boolean', allowed: 'boolean', role: 'text' }),
];
