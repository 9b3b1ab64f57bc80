import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `identity.access` also answers the caller's role in the organisation (NULL for a trusted back-end, and for a
 * caller who is not a member), so that a read that checks access in its statement knows, in the same round
 * trip, what that caller may see: an override's note (free text that may name a customer's contact) only for
 * owners, admins and service keys (issue 38). A new column: DROP and CREATE (no other function calls it).
 * Whether the caller is authenticated and allowed is unchanged.
 */
export class AccessRole1764002300000 implements MigrationInterface {
  name = 'AccessRole1764002300000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION identity.access(uuid, uuid, bytea)`);
    // The caller: the user of a session token not yet verified (its SHA-256: a live session), else a verified
    // user, else (both NULL) a trusted back-end, which may read any organisation that exists.
    await queryRunner.query(`
      CREATE FUNCTION identity.access(org uuid, caller_user uuid, caller_token bytea)
      RETURNS TABLE (authenticated boolean, allowed boolean, role text)
      LANGUAGE sql STABLE AS $$
        SELECT caller_token IS NULL OR s.user_id IS NOT NULL,
               CASE WHEN caller_token IS NOT NULL OR caller_user IS NOT NULL THEN m.role IS NOT NULL
                    ELSE EXISTS (SELECT 1 FROM organisations o WHERE o.id = org) END,
               m.role
        FROM (SELECT CASE WHEN caller_token IS NOT NULL THEN (SELECT l.user_id FROM identity.live_session(caller_token) l)
                          ELSE caller_user END AS user_id) s
        LEFT JOIN memberships m ON m.organisation_id = org AND m.user_id = s.user_id
      $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION identity.access(uuid, uuid, bytea)`);
    await queryRunner.query(`
      CREATE FUNCTION identity.access(org uuid, caller_user uuid, caller_token bytea)
      RETURNS TABLE (authenticated boolean, allowed boolean)
      LANGUAGE sql STABLE AS $$
        SELECT caller_token IS NULL OR s.user_id IS NOT NULL,
               CASE WHEN caller_token IS NOT NULL
                      THEN EXISTS (SELECT 1 FROM memberships m WHERE m.organisation_id = org AND m.user_id = s.user_id)
                    WHEN caller_user IS NOT NULL
                      THEN EXISTS (SELECT 1 FROM memberships m WHERE m.organisation_id = org AND m.user_id = caller_user)
                    ELSE EXISTS (SELECT 1 FROM organisations o WHERE o.id = org) END
        FROM (SELECT CASE WHEN caller_token IS NOT NULL THEN (SELECT l.user_id FROM identity.live_session(caller_token) l) END AS user_id) s
      $$`);
  }
}
