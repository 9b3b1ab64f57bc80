import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * A provider subscription the webhook has tied to an organisation. Lets events without metadata find
 * their organisation, and remembers deletions: a deleted subscription id never comes back to life.
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

  /** `created` of its `customer.subscription.deleted` event; set means deleted for good. */
  @Column('bigint', { name: 'deleted_event_created', nullable: true })
  deletedEventCreated: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
