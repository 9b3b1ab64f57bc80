import { Check, Column, Entity, ForeignKey, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * One usage counter per (organisation, metric, period): `projects` (like every further metric of the tier
 * table) is a gauge kept in the row with period_start 0; `ai_tokens` gets a new row per billing period (its start, Unix seconds), so a new period
 * starts at 0 while older periods stay as history. Written with plain SQL by the UsageService.
 */
@Entity('usage_counters')
@Check('usage_counters_metric_check', `metric ~ '^[a-z][a-z0-9_]{0,63}$' AND metric <> 'users'`)
@Check('usage_counters_period_start_check', `period_start >= 0`)
@Check('usage_counters_used_check', `used >= 0`)
export class UsageCounter {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'usage_counters_pkey' })
  @ForeignKey(() => Organisation, { name: 'usage_counters_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'usage_counters_pkey' })
  /** projects, ai_tokens, or a further metric of the tier table. */
  metric: string;

  /** 0 for a gauge; else the billing period's start (Unix seconds). */
  @PrimaryColumn('bigint', { name: 'period_start', primaryKeyConstraintName: 'usage_counters_pkey' })
  periodStart: number;

  @Column('bigint', { default: 0 })
  used: number;

  /** The highest of USAGE_ALERT_THRESHOLDS announced (`usage.threshold`) in this period; 0: none yet. */
  @Column('integer', { name: 'alerted_threshold', default: 0 })
  alertedThreshold: number;

  /** A credits metric: its last usage event left `available` below the low threshold (`credits.low` sent or due). */
  @Column('boolean', { name: 'credits_low', default: false })
  creditsLow: boolean;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
