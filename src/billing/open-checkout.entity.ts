import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * The checkout session an organisation has open at the provider: at most one (the primary key), so two tabs or
 * two instances never hand out two payable sessions. While a request is opening or replacing it, `claim` names
 * that request (a lease: one older than a few minutes belongs to a request that died and may be taken over).
 * Written only by OpenCheckoutsRepository.
 */
@Entity('open_checkouts')
export class OpenCheckout {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'open_checkouts_pkey' })
  @ForeignKey(() => Organisation, { name: 'open_checkouts_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  /** The provider's checkout session id; null until the first session of the organisation is recorded. */
  @Column('text', { name: 'session_id', nullable: true })
  sessionId: string | null;

  @Column('text', { nullable: true })
  url: string | null;

  /** What the session sells: a checkout for the same tier, price and seats gets this session back. */
  @Column('text', { nullable: true })
  tier: string | null;

  @Column('text', { name: 'price_id', nullable: true })
  priceId: string | null;

  /** The seats it sells (a per-seat tier's quantity); null for a tier not sold per seat. */
  @Column('integer', { nullable: true })
  seats: number | null;

  /** The days of trial it gives (0: none). */
  @Column('integer', { name: 'trial_days', default: 0 })
  trialDays: number;

  /** The currency the session was asked in (lower case); null: the price's own. */
  @Column('text', { nullable: true })
  currency: string | null;

  @Column('uuid', { nullable: true })
  claim: string | null;

  @Column('timestamptz', { name: 'claimed_at', nullable: true })
  claimedAt: Date | null;
}
