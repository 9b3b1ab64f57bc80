import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A one-time sign-in link of the operator console (`console:link`, spec §14). Only the SHA-256 of the link's
 * token is kept: the database never holds a usable link. Redeemed once (`used_at`), before `expires_at`.
 * Written only by ConsoleAuthRepository.
 */
@Entity('console_sign_in_links')
export class ConsoleSignInLink {
  @PrimaryColumn('bytea', { name: 'token_hash', primaryKeyConstraintName: 'console_sign_in_links_pkey' })
  tokenHash: Buffer;

  /** The operator it signs in, as the audit log names them (`operator:<email>`). */
  @Column('text')
  email: string;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;

  @Column('timestamptz', { name: 'used_at', nullable: true })
  usedAt: Date | null;
}
