import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A provider subscription the webhook has tied to an organisation. Lets events without metadata find
 * their organisation, and remembers deletions: a deleted subscription id never comes back to life.
 */
@Entity('provider_subscriptions')
export class ProviderSubscription {
  @PrimaryColumn('text', { name: 'subscription_id' })
  subscriptionId: string;

  @Column('uuid', { name: 'organisation_id' })
  organisationId: string;

  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  /** `created` of its `customer.subscription.deleted` event; set means deleted for good. */
  @Column('bigint', { name: 'deleted_event_created', nullable: true })
  deletedEventCreated: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
