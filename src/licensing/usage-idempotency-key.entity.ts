import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * The first successful answer to a usage report, per caller-chosen key, kept at least 24 hours.
 * Written with plain SQL by the UsageService.
 */
@Entity('usage_idempotency_keys')
@Index('usage_idempotency_keys_age_idx', ['organisationId', 'createdAt'])
export class UsageIdempotencyKey {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'usage_idempotency_keys_pkey' })
  @ForeignKey(() => Organisation, { name: 'usage_idempotency_keys_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'usage_idempotency_keys_pkey' })
  key: string;

  @Column('text')
  metric: string;

  @Column('bigint')
  amount: number;

  /** The answer given; null until the report has been applied. */
  @Column('jsonb', { nullable: true })
  response: object | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
