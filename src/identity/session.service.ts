import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AuthUser } from '../common/current-user.decorator';
import { preparedQuery } from '../database/prepared';

export const hashToken = (token: string): Buffer => createHash('sha256').update(token).digest();

/**
 * The one definition of a live session, as a condition on `sessions`: the token's hash (the parameter
 * named by `tokenHashParam`) matches, and the session is neither revoked nor expired. Statements that
 * authenticate a caller themselves (the status read, in one round trip) embed it too.
 */
export const liveSession = (tokenHashParam: string) =>
  `sessions.token_hash = ${tokenHashParam} AND sessions.revoked_at IS NULL AND sessions.expires_at > now()`;

const AUTHENTICATE_SQL = `
  SELECT u.id, u.email FROM sessions JOIN users u ON u.id = sessions.user_id WHERE ${liveSession('$1')}`;

@Injectable()
export class SessionService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Issues a new opaque token (32 random bytes, base64url). Only its hash is stored. In the same statement,
   * up to 100 of the user's sessions that expired or were revoked are deleted (their tokens are refused
   * either way), so the table grows with live sessions, not with every login ever made. SKIP LOCKED:
   * never waits on another writer.
   */
  async create(userId: string, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const [row] = await this.db.query(
      `WITH pruned AS (
         DELETE FROM sessions WHERE id IN (
           SELECT id FROM sessions WHERE user_id = $2 AND (expires_at <= now() OR revoked_at IS NOT NULL)
           LIMIT 100 FOR UPDATE SKIP LOCKED))
       INSERT INTO sessions (token_hash, user_id, expires_at)
       VALUES ($1, $2, now() + make_interval(secs => $3)) RETURNING expires_at`,
      [hashToken(token), userId, ttlSeconds],
    );
    return { token, expiresAt: row.expires_at };
  }

  /** The user behind a live token, or null when it is unknown, expired or revoked. One round trip. */
  async authenticate(token: string): Promise<AuthUser | null> {
    const rows = await preparedQuery<AuthUser>(this.db, AUTHENTICATE_SQL, [hashToken(token)]);
    return rows[0] ?? null;
  }

  /** True when a live session was revoked; revoking twice or an unknown token is false. */
  async revoke(token: string): Promise<boolean> {
    // TypeORM answers an UPDATE with [rows, affectedCount].
    const [, affected] = await this.db.query(
      `UPDATE sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL`,
      [hashToken(token)],
    );
    return affected > 0;
  }

  /** Revokes every live session of the user; answers how many. */
  async revokeAllOf(userId: string): Promise<number> {
    const [, affected] = await this.db.query(
      `UPDATE sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()`,
      [userId],
    );
    return affected;
  }
}
