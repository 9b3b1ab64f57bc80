import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * A provider subscription tied to an organisation, with its state as the provider last told it (in event
 * order). An organisation's license follows its best live subscription (licensing/licensing.repository.ts).
 * Lets events without metadata find their organisation, and remembers deletions: a deleted subscription
 * id never comes back to life. Provider timestamps are Unix seconds.
 */
@Entity('provider_subscriptions')
@Index('provider_subscriptions_org_idx', ['organisationId'])
export class ProviderSubscription {
  @PrimaryColumn('text', { name: 'subscription_id', primaryKeyConstraintName: 'provider_subscriptions_pkey' })
  subscriptionId: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'provider_subscriptions_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  /** The paid tier its price grants (null until an event with a resolvable tier was applied). */
  @Column('text', { nullable: true })
  tier: string | null;

  /** The provider's status: active, trialing, past_due, unpaid, incomplete, incomplete_expired, paused, canceled. */
  @Column('text', { nullable: true })
  status: string | null;

  @Column('bigint', { name: 'current_period_start', nullable: true })
  currentPeriodStart: number | null;

  @Column('bigint', { name: 'current_period_end', nullable: true })
  currentPeriodEnd: number | null;

  /** `created` of the first event that showed it past_due after another status: grace counts from here. */
  @Column('bigint', { name: 'past_due_since', nullable: true })
  pastDueSince: number | null;

  /** `created` of the last subscription event applied to it: older events are stale. */
  @Column('bigint', { name: 'last_event_created', nullable: true })
  lastEventCreated: number | null;

  /** Precedence of that event's kind (created 1 < updated 2 < deleted 3), for events with equal `created`. */
  @Column('smallint', { name: 'last_event_rank', nullable: true })
  lastEventRank: number | null;

  /** `created` of its `customer.subscription.deleted` event; set means deleted for good. */
  @Column('bigint', { name: 'deleted_event_created', nullable: true })
  deletedEventCreated: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
