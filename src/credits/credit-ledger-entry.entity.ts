import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';
import { CreditGrant } from './credit-grant.entity';

export const LEDGER_KINDS = ['grant', 'consume', 'expire', 'void', 'release'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/**
 * The credit ledger (spec §16.1), append-only: every movement of a grant's `remaining`, with its signed amount
 * (a grant +, a consumption, expiry or void −) and the metric's balance after it; `release` entries (a
 * reservation's hold given back) name no grant and move no `remaining`. `reference`: the usage report's
 * idempotency key, the reservation, the checkout session, the invoice, the period, or the operator. Rows are
 * only ever inserted.
 */
@Entity('credit_ledger')
@Check('credit_ledger_kind_check', `kind IN ('grant', 'consume', 'expire', 'void', 'release')`)
@Check('credit_ledger_sign_check', `(kind IN ('grant', 'release') AND amount >= 0) OR (kind IN ('consume', 'expire', 'void') AND amount < 0)`)
// The ledger read: an organisation's entries newest first, of one metric or all; a grant's entries.
@Index('credit_ledger_organisation_idx', ['organisationId', 'metric', 'id'])
@Index('credit_ledger_grant_idx', ['grantId'])
export class CreditLedgerEntry {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', primaryKeyConstraintName: 'credit_ledger_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'credit_ledger_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text')
  metric: string;

  @Column('timestamptz', { default: () => 'now()' })
  at: Date;

  @Column('text')
  kind: LedgerKind;

  @Column('bigint')
  amount: number;

  @Column('uuid', { name: 'grant_id', nullable: true })
  @ForeignKey(() => CreditGrant, { name: 'credit_ledger_grant_id_fkey', onDelete: 'CASCADE' })
  grantId: string | null;

  /** The metric's balance (the grants that count) after this entry. */
  @Column('bigint', { name: 'balance_after' })
  balanceAfter: number;

  @Column('text', { nullable: true })
  reference: string | null;
}
