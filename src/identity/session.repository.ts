import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, Raw } from 'typeorm';
import { AuthUser } from '../common/current-user.decorator';
import { preparedQuery } from '../database/prepared';
import { LoginSession } from './login-session.entity';

/**
 * Every request with a session token: prepared. A live session is defined once, by identity.live_session
 * (migration 1764002000000-ModuleFunctions.ts), which the statements that authenticate a caller themselves
 * (the status read, in one round trip, through identity.access) call too.
 */
const AUTHENTICATE_SQL = `SELECT u.id, u.email FROM identity.live_session($1) s JOIN users u ON u.id = s.user_id`;

/**
 * A new session, and in the same statement up to 100 of the user's sessions that expired or were revoked
 * deleted (their tokens are refused either way), so the table grows with live sessions, not with every
 * login ever made. SKIP LOCKED: never waits on another writer.
 */
const CREATE_SQL = `
  WITH pruned AS (
    DELETE FROM sessions WHERE id IN (
      SELECT id FROM sessions WHERE user_id = $2 AND (expires_at <= now() OR revoked_at IS NOT NULL)
      LIMIT 100 FOR UPDATE SKIP LOCKED))
  INSERT INTO sessions (token_hash, user_id, expires_at)
  VALUES ($1, $2, now() + make_interval(secs => $3)) RETURNING id, expires_at AS "expiresAt"`;

/** Login sessions, by the SHA-256 of their token (the token itself is never stored). */
@Injectable()
export class SessionRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(m: EntityManager, tokenHash: Buffer, userId: string, ttlSeconds: number): Promise<{ id: string; expiresAt: Date }> {
    const [row] = await m.query(CREATE_SQL, [tokenHash, userId, ttlSeconds]);
    return row;
  }

  async liveSessionUser(tokenHash: Buffer): Promise<AuthUser | undefined> {
    const [user] = await preparedQuery<AuthUser>(this.db, AUTHENTICATE_SQL, [tokenHash]);
    return user;
  }

  /** Revokes the live session with this token hash; answers it (its id and user), if there was one. */
  async revoke(m: EntityManager, tokenHash: Buffer): Promise<{ id: string; userId: string } | undefined> {
    const { raw } = await m
      .createQueryBuilder()
      .update(LoginSession)
      .set({ revokedAt: () => 'now()' })
      .where({ tokenHash, revokedAt: IsNull() })
      .returning(['id', 'userId'])
      .execute();
    const [row] = raw as { id: string; user_id: string }[];
    return row && { id: row.id, userId: row.user_id };
  }

  /** Revokes every live session of the user; answers how many. */
  async revokeAllOf(m: EntityManager, userId: string): Promise<number> {
    const { affected } = await m
      .getRepository(LoginSession)
      .update({ userId, revokedAt: IsNull(), expiresAt: Raw((column) => `${column} > now()`) }, { revokedAt: () => 'now()' });
    return affected ?? 0;
  }
}
