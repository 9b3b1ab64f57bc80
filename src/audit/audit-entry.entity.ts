import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One change made through the provisioning API or the operator CLI (spec §12, "Audit trail"), written in the
 * same transaction as the change, so a change that rolled back left no row. `before`/`after` hold the
 * changed record's public fields, never a secret (no session token, no key). Written only by AuditRepository.
 */
@Entity('audit_log')
// GET /api/admin/audit: newest first by id (bigserial: commit order within one writer), per organisation or overall.
@Index('audit_log_organisation_idx', ['organisationId', 'id'])
export class AuditEntry {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', primaryKeyConstraintName: 'audit_log_pkey' })
  id: string;

  @Column('timestamptz', { default: () => 'now()' })
  at: Date;

  /** `service_key:<name>`, `user:<id>`, `cli:<os user>` or `operator:<email>`. */
  @Column('text')
  actor: string;

  /** A dotted name: `organisation.created`, `member.role_changed`, `sessions.revoked`, … */
  @Column('text')
  action: string;

  @Column('uuid', { name: 'organisation_id', nullable: true })
  organisationId: string | null;

  @Column('jsonb', { nullable: true })
  before: Record<string, unknown> | null;

  @Column('jsonb', { nullable: true })
  after: Record<string, unknown> | null;

  @Column('text', { name: 'request_id', nullable: true })
  requestId: string | null;
}
