import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { AuthUser } from '../common/current-user.decorator';
import { SessionRepository } from './session.repository';

export const hashToken = (token: string): Buffer => createHash('sha256').update(token).digest();

@Injectable()
export class SessionService {
  constructor(private readonly sessions: SessionRepository) {}

  /**
   * Issues a new opaque token (32 random bytes, base64url). Only its hash is stored; the user's dead
   * sessions are pruned in the same statement.
   */
  async create(m: EntityManager, userId: string, ttlSeconds: number): Promise<{ id: string; token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const { id, expiresAt } = await this.sessions.insert(m, hashToken(token), userId, ttlSeconds);
    return { id, token, expiresAt };
  }

  /** The user behind a live token, or null when it is unknown, expired or revoked. One round trip. */
  async authenticate(token: string): Promise<AuthUser | null> {
    return (await this.sessions.liveSessionUser(hashToken(token))) ?? null;
  }

  /** The live session revoked (its id and user); revoking twice or an unknown token is undefined. */
  revoke(m: EntityManager, token: string): Promise<{ id: string; userId: string } | undefined> {
    return this.sessions.revoke(m, hashToken(token));
  }

  /** Revokes every live session of the user; answers how many. */
  revokeAllOf(m: EntityManager, userId: string): Promise<number> {
    return this.sessions.revokeAllOf(m, userId);
  }
}
