import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/** What the subscription shows once the provider has made a change: the fields of its view to compare. */
export interface ExpectedSubscription {
  tier?: string;
  interval?: string;
  seats?: number;
  cancel_at_period_end?: boolean;
  pending_change?: { tier: string; interval: string; seats: number } | null;
}

/**
 * A change whose outcome at the provider is not known yet (it timed out there): who asked for it and under
 * which request, what the subscription was before, and what it shows once the provider has made it.
 */
export interface AwaitedChange {
  actor: string;
  requestId: string | null;
  action: string;
  subscriptionId: string;
  customerId: string | null;
  before: Record<string, unknown> | null;
  expect: ExpectedSubscription;
}

/**
 * A change of an organisation's subscription under way (spec §11.4): while a request makes one at the provider,
 * its row names that request, so a second change of the same subscription waits and then starts from the
 * first one's result instead of from the state both read. A lease: a claim older than a few minutes belongs
 * to a request that died and may be taken over. No connection is held meanwhile. Written only by
 * SubscriptionClaimsRepository.
 */
@Entity('subscription_change_claims')
export class SubscriptionChangeClaim {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'subscription_change_claims_pkey' })
  @ForeignKey(() => Organisation, { name: 'subscription_change_claims_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('uuid')
  claim: string;

  @Column('timestamptz', { name: 'claimed_at' })
  claimedAt: Date;

  /**
   * The users limit the change under way would put in force, when lower than today's (a downgrade): member
   * additions are held to it from before the provider is asked until the change is recorded (spec §11.4).
   */
  @Column('integer', { name: 'users_cap', nullable: true })
  usersCap: number | null;

  /**
   * Set when the provider did not answer the change in time: the claim is then kept (longer than a change can
   * take) until the provider's answer or the webhook shows what it did, so no second change starts from a
   * state the provider may already have left; the change is audited when it becomes known.
   */
  @Column('jsonb', { nullable: true })
  awaiting: AwaitedChange | null;
}
