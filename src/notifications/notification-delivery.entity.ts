import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { NotificationMessage } from './notification-message.entity';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One message to one receiver (a URL of NOTIFY_URLS when the message was written): each receiver is retried
 * on its own schedule, so one that is down never holds up another. The job queue carries the attempts;
 * this row is the truth about them. Written only by NotificationsService and the delivery task.
 */
@Entity('notification_deliveries')
@Unique('notification_deliveries_message_url_key', ['messageId', 'url'])
@Check('notification_deliveries_status_check', `status IN ('pending', 'delivered', 'failed')`)
// The backlog (metrics) and the sweep for deliveries whose job was lost with a killed instance.
@Index('notification_deliveries_pending_idx', ['nextAttemptAt'], { where: `status = 'pending'` })
// The operator console's list of failed notifications.
@Index('notification_deliveries_failed_idx', ['messageId'], { where: `status = 'failed'` })
export class NotificationDelivery {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'notification_deliveries_pkey' })
  id: string;

  @Column('text', { name: 'message_id' })
  @ForeignKey(() => NotificationMessage, { name: 'notification_deliveries_message_id_fkey', onDelete: 'CASCADE' })
  messageId: string;

  @Column('text')
  url: string;

  @Column('text', { default: 'pending' })
  status: DeliveryStatus;

  @Column('integer', { default: 0 })
  attempts: number;

  /** Why the last attempt failed: an HTTP status, a timeout, a network error code. Never a body or a secret. */
  @Column('text', { name: 'last_error', nullable: true })
  lastError: string | null;

  /** When the next attempt is due (null once delivered or given up). */
  @Column('timestamptz', { name: 'next_attempt_at', nullable: true, default: () => 'now()' })
  nextAttemptAt: Date | null;

  /** Where the retry schedule counts from: the message's creation, or the last `notifications:retry`. */
  @Column('timestamptz', { name: 'retry_from', default: () => 'now()' })
  retryFrom: Date;

  @Column('timestamptz', { name: 'delivered_at', nullable: true })
  deliveredAt: Date | null;
}
