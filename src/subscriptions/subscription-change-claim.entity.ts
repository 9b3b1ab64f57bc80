import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * A change of an organisation's subscription under way (spec §11.4): while a request makes one at the provider,
 * its row names that request, so a second change of the same subscription waits and then starts from the
 * first one's result instead of from the state both read. A lease: a claim older than a few minutes belongs
 * to a request that died and may be taken over. No connection is held meanwhile. Written only by
 * SubscriptionChangesRepository.
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
}
