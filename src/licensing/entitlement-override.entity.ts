import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * A per-organisation override of one entitlement (spec §12): a feature (`value` a JSON boolean) or a metric's
 * limit (`value` a JSON integer ≥ 0). It replaces the tier's value while it lasts: until `expires_at`
 * (none: until deleted), compared with now() by the license SQL itself (licensing.repository.ts), so an
 * expiry needs no job to take effect. Expired rows stay, and are listed, until deleted. Written only by
 * OverridesRepository.
 */
@Entity('entitlement_overrides')
@Check('entitlement_overrides_value_check', `jsonb_typeof(value) = 'boolean' OR (jsonb_typeof(value) = 'number' AND (value)::numeric >= 0)`)
@Check('entitlement_overrides_note_check', `char_length(note) <= 500`)
// The expiry sweep (notifications): overrides that expired since their organisation was last compared.
@Index('entitlement_overrides_expires_at_idx', ['expiresAt'], { where: 'expires_at IS NOT NULL' })
export class EntitlementOverride {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'entitlement_overrides_pkey' })
  @ForeignKey(() => Organisation, { name: 'entitlement_overrides_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  /** A feature or a metric of the tier table. */
  @PrimaryColumn('text', { primaryKeyConstraintName: 'entitlement_overrides_pkey' })
  name: string;

  @Column('jsonb')
  value: boolean | number;

  @Column('timestamptz', { name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  @Column('text', { nullable: true })
  note: string | null;

  /** When this value was set (a change of value, expiry or note sets it anew). */
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;
}
