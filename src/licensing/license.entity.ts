import { Column, Entity, ForeignKey, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * An organisation's license. No row means free, active, not expired. Written by the webhook handlers;
 * read by the status endpoint. Provider timestamps are Unix seconds.
 */
@Entity('licenses')
@Index('licenses_subscription_idx', ['subscriptionId'])
export class License {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'licenses_pkey' })
  @ForeignKey(() => Organisation, { name: 'licenses_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text', { default: 'free' })
  tier: string;

  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  /** The provider's subscription status: active, trialing, past_due, canceled, unpaid, … */
  @Column('text', { name: 'subscription_status', nullable: true })
  subscriptionStatus: string | null;

  @Column('bigint', { name: 'current_period_start', nullable: true })
  currentPeriodStart: number | null;

  @Column('bigint', { name: 'current_period_end', nullable: true })
  currentPeriodEnd: number | null;

  /** `created` of the last subscription event applied: older events are stale. */
  @Column('bigint', { name: 'last_event_created', nullable: true })
  lastEventCreated: number | null;

  /** Precedence of that event's kind (created 1 < updated 2 < deleted 3), for events with equal `created`. */
  @Column('smallint', { name: 'last_event_rank', nullable: true })
  lastEventRank: number | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
