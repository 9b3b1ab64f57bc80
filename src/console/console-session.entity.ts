import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A signed-in operator of the console (cookie `console_session`, 12 hours). Its own table, apart from the
 * API's `sessions`, so that neither credential can stand for the other. Only the token's SHA-256 is kept.
 * Written only by ConsoleAuthRepository.
 */
@Entity('console_sessions')
// Expired rows are deleted a batch at a time when links are made.
@Index('console_sessions_expires_idx', ['expiresAt'])
export class ConsoleSession {
  @PrimaryColumn('bytea', { name: 'token_hash', primaryKeyConstraintName: 'console_sessions_pkey' })
  tokenHash: Buffer;

  @Column('text')
  email: string;

  /** How the operator signed in: `link` or `oidc`. */
  @Column('text')
  via: string;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;
}
