import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Who runs a periodic job (the provider reconciliation) until when: one instance at a time takes the
 * lease of an expired row; a holder that dies frees it by expiry. Written only by JobLeasesRepository.
 */
@Entity('job_leases')
export class JobLease {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'job_leases_pkey' })
  name: string;

  /** The instance holding it (host, pid and a random tag). */
  @Column('text')
  holder: string;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;
}
