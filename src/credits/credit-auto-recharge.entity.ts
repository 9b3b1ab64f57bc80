import { Check, Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * An organisation's automatic top-up of one metric (spec §16.4): when a report leaves `available` below
 * `threshold`, one `pack` is bought off-session, at most `monthly_limit` a calendar month (UTC). A declined
 * payment turns it off (`enabled` false) with `last_error`, until it is saved again. Written only through
 * CreditsService (saveAutoRecharge, deleteAutoRecharge, disableAutoRecharge); read by the usage write.
 */
@Entity('credit_auto_recharges')
@Check('credit_auto_recharges_threshold_check', `threshold >= 0`)
@Check('credit_auto_recharges_monthly_limit_check', `monthly_limit BETWEEN 1 AND 100`)
export class CreditAutoRecharge {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'credit_auto_recharges_pkey' })
  @ForeignKey(() => Organisation, { name: 'credit_auto_recharges_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'credit_auto_recharges_pkey' })
  metric: string;

  /** A credit pack of the tier table's `credit_packs`. */
  @Column('text')
  pack: string;

  @Column('bigint')
  threshold: number;

  @Column('integer', { name: 'monthly_limit' })
  monthlyLimit: number;

  @Column('boolean', { default: true })
  enabled: boolean;

  @Column('text', { name: 'last_error', nullable: true })
  lastError: string | null;

  @Column('timestamptz', { name: 'updated_at', default: () => 'now()' })
  updatedAt: Date;
}
