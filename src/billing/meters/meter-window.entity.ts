import { Check, Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../../identity/organisation.entity';

export const METER_WINDOW_STATUSES = ['open', 'pending', 'delivered', 'failed'] as const;
/**
 * `open`: still summing the usage accepted in its window; `pending`: closed (sealed), its meter event not yet
 * delivered; `delivered`: the provider has it; `failed`: refused for good (`last_error` says why).
 */
export type MeterWindowStatus = (typeof METER_WINDOW_STATUSES)[number];

/**
 * One organisation's accepted usage of one metered metric in one window of METER_FLUSH_S seconds (spec §13),
 * summed by licensing's usage write in the transaction that accepts it (billing.meter_usage) and reported to the
 * provider as one meter event, identifier `<organisation_id>:<metric>:<window_start>`. Written only by
 * MetersRepository and that fragment.
 */
@Entity('meter_windows')
@Check('meter_windows_status_check', `status IN ('open', 'pending', 'delivered', 'failed')`)
@Check('meter_windows_value_check', `value > 0`)
// The flush's and the sweep's lookups: the few windows not yet delivered.
@Index('meter_windows_undelivered_idx', ['status', 'windowEnd'], { where: `status IN ('open', 'pending')` })
export class MeterWindow {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'meter_windows_pkey' })
  @ForeignKey(() => Organisation, { name: 'meter_windows_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'meter_windows_pkey' })
  metric: string;

  /** Unix seconds. */
  @PrimaryColumn('bigint', { name: 'window_start', primaryKeyConstraintName: 'meter_windows_pkey' })
  windowStart: string;

  /** Unix seconds: the window closes then (its length is METER_FLUSH_S as it was when the window opened). */
  @Column('bigint', { name: 'window_end' })
  windowEnd: string;

  /** The organisation's provider customer when the window opened: the one its usage is billed to. */
  @Column('text', { name: 'customer_id' })
  customerId: string;

  /** The usage accepted in the window, in the metric's units. */
  @Column('bigint')
  value: string;

  @Column('text', { default: 'open' })
  status: MeterWindowStatus;

  @Column('integer', { default: 0 })
  attempts: number;

  @Column('text', { name: 'last_error', nullable: true })
  lastError: string | null;

  /** When the next attempt is due (pending windows). */
  @Column('timestamptz', { name: 'next_attempt_at', nullable: true })
  nextAttemptAt: Date | null;

  /** An attempt under way holds the window until then (a lease: one that died lets it go by itself). */
  @Column('timestamptz', { name: 'leased_until', nullable: true })
  leasedUntil: Date | null;

  @Column('timestamptz', { name: 'delivered_at', nullable: true })
  deliveredAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
