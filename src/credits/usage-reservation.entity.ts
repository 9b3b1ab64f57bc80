import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

export const RESERVATION_STATUSES = ['held', 'expired', 'committed', 'released'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/**
 * A reservation (spec §16.5): `amount` of a metric held against what it allows, from the usage write that
 * accepted it until it is committed, released, or `expires_at` passes (which needs no job: a hold counts only
 * while `expires_at > now()`, credits.live_holds; the minutely job marks lapsed ones `expired`). A commit stores
 * what it spent and its answer, which a repeated commit gets again. Written only by the credits schema's functions
 * (through licensing's usage write) and CreditsRepository.
 */
@Entity('usage_reservations')
@Check('usage_reservations_status_check', `status IN ('held', 'expired', 'committed', 'released')`)
@Check('usage_reservations_amount_check', `amount >= 1`)
// The live holds of a counter: every report, check and reservation of the metric reads them.
@Index('usage_reservations_held_idx', ['organisationId', 'metric'], { where: `status = 'held'` })
// Pruning settled and lapsed reservations.
@Index('usage_reservations_settled_idx', ['createdAt'])
export class UsageReservation {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'usage_reservations_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'usage_reservations_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text')
  metric: string;

  @Column('bigint')
  amount: number;

  @Column('text', { default: 'held' })
  status: ReservationStatus;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;

  @Column('timestamptz', { name: 'settled_at', nullable: true })
  settledAt: Date | null;

  /** What a commit reported. */
  @Column('bigint', { nullable: true })
  spent: number | null;

  /** A commit's answer (the usage answer it gave). */
  @Column('jsonb', { nullable: true })
  response: Record<string, unknown> | null;
}
