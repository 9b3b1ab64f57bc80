import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/**
 * Per organisation: the license last notified and the version of its last message (spec §10). A row is
 * created (free, active, not expired, version 0: what the web app assumes of a new organisation) the
 * first time a change is checked; its row lock orders the messages of one organisation across instances.
 * Written only by NotificationsService.
 */
@Entity('notification_states')
export class NotificationState {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'notification_states_pkey' })
  @ForeignKey(() => Organisation, { name: 'notification_states_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  /** The `version` of the organisation's last message; the next one gets version + 1. */
  @Column('bigint', { default: 0 })
  version: number;

  @Column('text', { default: 'free' })
  tier: string;

  @Column('boolean', { name: 'is_active', default: true })
  isActive: boolean;

  @Column('boolean', { name: 'is_expired', default: false })
  isExpired: boolean;

  /**
   * The features, limits in force and seats last notified (`{features, limits, seats}`); null on a row from
   * before they were recorded, which stands for what its tier implied (notifications.repository.ts).
   */
  @Column('jsonb', { nullable: true })
  entitlements: { features: Record<string, boolean>; limits: Record<string, number>; seats: number | null } | null;

  /** When the license was last compared (the grace-expiry job looks again only at rows older than an expiry). */
  @Column('timestamptz', { name: 'checked_at', default: () => 'now()' })
  checkedAt: Date;
}
