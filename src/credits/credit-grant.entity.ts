import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

export const GRANT_CATEGORIES = ['promotional', 'paid'] as const;
export type GrantCategory = (typeof GRANT_CATEGORIES)[number];
export const GRANT_SOURCES = ['admin', 'top_up', 'auto_recharge', 'rollover'] as const;
export type GrantSource = (typeof GRANT_SOURCES)[number];

/**
 * A credit grant (spec §16.1): `amount` units of one metric given to an organisation, of which `remaining` are
 * left. It counts while `effective_at <= now() < expires_at` and not voided (credits.counting_grants, the one
 * definition); `remaining` only moves together with a ledger entry that says why (credit_ledger), so for every
 * grant `amount` minus its consume, expire and void entries is `remaining`. A grant is made once per
 * (organisation, source, reference): a checkout session, an invoice, a period's rollover, an admin request's
 * idempotency key. Written only by CreditsRepository and the credits schema's functions.
 */
@Entity('credit_grants')
@Check('credit_grants_amount_check', `amount >= 1`)
@Check('credit_grants_remaining_check', `remaining >= 0 AND remaining <= amount`)
@Check('credit_grants_category_check', `category IN ('promotional', 'paid')`)
@Check('credit_grants_source_check', `source IN ('admin', 'top_up', 'auto_recharge', 'rollover')`)
@Check('credit_grants_priority_check', `priority BETWEEN 1 AND 100`)
@Check('credit_grants_expires_at_check', `expires_at IS NULL OR expires_at > effective_at`)
@Check('credit_grants_note_check', `char_length(note) <= 500`)
@Index('credit_grants_reference_key', ['organisationId', 'source', 'reference'], { unique: true, where: 'reference IS NOT NULL' })
// The grants of an organisation's metric that may still be drawn on (consumption, balances).
@Index('credit_grants_open_idx', ['organisationId', 'metric'], { where: 'NOT exhausted' })
// The minutely job: grants past their expiry with something left to write off.
@Index('credit_grants_expiry_idx', ['expiresAt'], { where: 'NOT exhausted AND expires_at IS NOT NULL' })
export class CreditGrant {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'credit_grants_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'credit_grants_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  /** A metric of the tier table counted per billing period. */
  @Column('text')
  metric: string;

  @Column('bigint')
  amount: number;

  @Column('bigint')
  remaining: number;

  /**
   * `remaining = 0`, kept by PostgreSQL. The indexes name it rather than `remaining`: a consumption that leaves
   * something changes no indexed value, so PostgreSQL rewrites the row on its page without new index entries (a
   * HOT update), and prunes the old versions as it reads the page, vacuum or not.
   */
  @Column({ type: 'boolean', generatedType: 'STORED', asExpression: 'remaining = 0', insert: false, update: false })
  exhausted: boolean;

  @Column('text')
  category: GrantCategory;

  /** 1–100; lower is drawn on first. */
  @Column('integer', { default: 50 })
  priority: number;

  @Column('text')
  source: GrantSource;

  /** What made it, unique per organisation and source: a checkout session, an invoice, an idempotency key, a period. */
  @Column('text', { nullable: true })
  reference: string | null;

  @Column('timestamptz', { name: 'effective_at', default: () => 'now()' })
  effectiveAt: Date;

  /** Null: never. */
  @Column('timestamptz', { name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  @Column('timestamptz', { name: 'voided_at', nullable: true })
  voidedAt: Date | null;

  @Column('text', { nullable: true })
  note: string | null;

  /** The admin request that made it, as given (its idempotency key's body: a retry with another body is a conflict). */
  @Column('jsonb', { nullable: true })
  request: Record<string, unknown> | null;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;
}
