import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A sign-in through the OpenID provider that has started and not yet come back (spec §14): the SHA-256 of the
 * random value in the browser's `console_oidc` cookie, from which the request's state, nonce and PKCE code
 * verifier are derived (console-oidc.service.ts), so the database holds none of them. Taken (deleted) by the
 * callback: single use; 10 minutes. Written only by ConsoleAuthRepository.
 */
@Entity('console_oidc_logins')
// Expired rows are deleted a batch at a time when a sign-in starts.
@Index('console_oidc_logins_expires_idx', ['expiresAt'])
export class ConsoleOidcLogin {
  @PrimaryColumn('bytea', { name: 'request_hash', primaryKeyConstraintName: 'console_oidc_logins_pkey' })
  requestHash: Buffer;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;
}
