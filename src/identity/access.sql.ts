import { liveSession } from './session.repository';

/**
 * Identity's tables as SQL fragments, for the hot statements of other modules that answer in one round
 * trip (the licensing status read verifies the session and the membership inside its own statement).
 * The SQL that reads organisations, memberships and sessions stays here, with their owner; each
 * function takes the SQL expressions (parameters or columns) to compare with.
 */
export const accessSql = {
  /** The user of the live session whose token hash is `tokenHash` (zero or one row). */
  liveSessionUser: (tokenHash: string) => `SELECT user_id FROM sessions WHERE ${liveSession(tokenHash)}`,
  isMember: (organisationId: string, userId: string) =>
    `EXISTS (SELECT 1 FROM memberships WHERE organisation_id = ${organisationId} AND user_id = ${userId})`,
  memberCount: (organisationId: string) => `(SELECT count(*) FROM memberships WHERE organisation_id = ${organisationId})`,
  organisationExists: (organisationId: string) => `EXISTS (SELECT 1 FROM organisations WHERE id = ${organisationId})`,
  /**
   * Locks the organisation's row against member changes (which take FOR UPDATE) for the rest of the
   * transaction, without blocking rows that merely reference it; one row when it exists.
   */
  lockOrganisation: (organisationId: string) => `SELECT id FROM organisations WHERE id = ${organisationId} FOR NO KEY UPDATE`,
};
