import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

export const RECHARGE_STATUSES = ['pending', 'paid', 'failed'] as const;
export type RechargeStatus = (typeof RECHARGE_STATUSES)[number];

/**
 * One automatic top-up (spec §16.4): made `pending` by the usage write that left `available` below the
 * threshold, in its transaction, with its job (`credits_recharge`), so it is bought after the commit and exactly
 * once; settled `paid` (its invoice, whose `invoice.paid` grants the pack) or `failed`. At most one pending per
 * organisation and metric (the partial unique index); the monthly limit counts those created in the calendar
 * month (UTC) that did not fail.
 */
@Entity('credit_recharges')
@Check('credit_recharges_status_check', `status IN ('pending', 'paid', 'failed')`)
@Index('credit_recharges_pending_key', ['organisationId', 'metric'], { unique: true, where: `status = 'pending'` })
@Index('credit_recharges_month_idx', ['organisationId', 'metric', 'createdAt'])
export class CreditRecharge {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'credit_recharges_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'credit_recharges_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text')
  metric: string;

  @Column('text')
  pack: string;

  @Column('text', { default: 'pending' })
  status: RechargeStatus;

  /** The provider's invoice, once the purchase made one. */
  @Column('text', { name: 'invoice_id', nullable: true })
  invoiceId: string | null;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;

  @Column('timestamptz', { name: 'settled_at', nullable: true })
  settledAt: Date | null;
}
