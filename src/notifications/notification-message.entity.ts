import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

export const NOTIFICATION_TYPES = [
  'license.updated',
  'usage.capacity',
  'trial.ending',
  'usage.threshold',
  'credits.low',
  'credits.granted',
  'credits.recharge_failed',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/**
 * The outbox: one message per change, written in the transaction of the change (spec §10). `id` is the
 * Standard Webhooks `webhook-id`, the same on every attempt; `body` is the exact JSON text every receiver
 * gets. Each receiver's delivery is a NotificationDelivery. Written only by NotificationsService.
 */
@Entity('notification_messages')
@Check(
  'notification_messages_type_check',
  `type IN ('license.updated', 'usage.capacity', 'trial.ending', 'usage.threshold', 'credits.low', 'credits.granted', 'credits.recharge_failed')`,
)
@Index('notification_messages_organisation_idx', ['organisationId', 'version'])
@Index('notification_messages_created_idx', ['createdAt'])
export class NotificationMessage {
  /** `msg_` and 32 hex digits. */
  @PrimaryColumn('text', { primaryKeyConstraintName: 'notification_messages_pkey' })
  id: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'notification_messages_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text')
  type: NotificationType;

  @Column('bigint')
  version: number;

  /** The JSON body as sent (text: signed byte for byte). */
  @Column('text')
  body: string;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;
}
