import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DeliveryStatus, NotificationDelivery } from './notification-delivery.entity';
import { NotificationMessage } from './notification-message.entity';

/** Delivers one notification delivery (payload `{ delivery_id }`), job key `notification_delivery:<id>`. */
export const DELIVERY_TASK = 'notification_delivery';

/** The job key of a delivery: one live job per delivery; adding it again replaces (or succeeds) the old one. */
export const deliveryJobKey = (deliveryId: string) => `${DELIVERY_TASK}:${deliveryId}`;

/** A message's status: pending while any delivery is, else failed when any gave up, else delivered. */
const MESSAGE_STATUS_SQL = `
  CASE WHEN bool_or(d.status = 'pending') THEN 'pending' WHEN bool_or(d.status = 'failed') THEN 'failed' ELSE 'delivered' END`;

const LIST_SQL = `
  SELECT m.id, m.type, m.organisation_id AS "organisationId", m.version, m.body, m.created_at AS "createdAt",
         ${MESSAGE_STATUS_SQL} AS status,
         json_agg(json_build_object('url', d.url, 'status', d.status, 'attempts', d.attempts, 'lastError', d.last_error,
                                    'nextAttemptAt', d.next_attempt_at, 'deliveredAt', d.delivered_at) ORDER BY d.url) AS deliveries
  FROM notification_messages m JOIN notification_deliveries d ON d.message_id = m.id
  GROUP BY m.id
  HAVING $1::text IS NULL OR ${MESSAGE_STATUS_SQL} = $1::text
  ORDER BY m.created_at DESC, m.version DESC
  LIMIT $2`;

// Adds each delivery's job (replacing a waiting one: the job key is the delivery's).
const addJob = (deliveryId: string, runAt?: string) =>
  `graphile_worker.add_job('${DELIVERY_TASK}', json_build_object('delivery_id', ${deliveryId}),
                           ${runAt ? `run_at => ${runAt}, ` : ''}job_key => '${deliveryJobKey('')}' || ${deliveryId})`;

/**
 * Every delivery of the message, delivered ones included, due now on a fresh retry schedule: the operator
 * asked for it to be sent again (receivers drop a webhook-id they already processed).
 */
const RETRY_SQL = `
  WITH d AS (
    UPDATE notification_deliveries
    SET status = 'pending', next_attempt_at = now(), retry_from = now(), delivered_at = NULL
    WHERE message_id = $1
    RETURNING id)
  SELECT count(j.id)::int AS requeued, (SELECT organisation_id FROM notification_messages WHERE id = $1) AS "organisationId"
  FROM d, LATERAL ${addJob('d.id')} AS j`;

/**
 * A pending delivery long overdue lost its job (an instance killed during an attempt leaves the job locked
 * for hours): a new job, now. Adding a job with the delivery's key replaces a waiting one, so this is safe.
 */
const REQUEUE_LOST_SQL = `
  WITH lost AS (
    UPDATE notification_deliveries SET next_attempt_at = now()
    WHERE id IN (SELECT id FROM notification_deliveries
                 WHERE status = 'pending' AND next_attempt_at < now() - interval '5 minutes'
                 ORDER BY next_attempt_at LIMIT 500 FOR UPDATE SKIP LOCKED)
    RETURNING id)
  SELECT count(*)::int AS n FROM lost, LATERAL ${addJob('lost.id')} AS j`;

/** A failed attempt: the next one scheduled as a new job ($3: its delay in seconds), or given up ($3 NULL). */
const FAILED_ATTEMPT_SQL = `
  WITH d AS (
    UPDATE notification_deliveries
    SET attempts = attempts + 1, last_error = $2,
        status = CASE WHEN $3::float8 IS NULL THEN 'failed' ELSE 'pending' END,
        next_attempt_at = now() + make_interval(secs => $3::float8)
    WHERE id = $1 AND status = 'pending'
    RETURNING id, status, next_attempt_at)
  SELECT d.status, CASE WHEN d.status = 'pending' THEN (${addJob('d.id', 'd.next_attempt_at')}).id END AS "jobId"
  FROM d`;

export interface NotificationRow {
  id: string;
  type: string;
  organisationId: string;
  version: number;
  status: DeliveryStatus;
  createdAt: Date;
  /** The JSON body as sent. */
  body: string;
  deliveries: {
    url: string;
    status: DeliveryStatus;
    attempts: number;
    lastError: string | null;
    nextAttemptAt: string | null;
    deliveredAt: string | null;
  }[];
}

/** What an attempt needs of a delivery and its message. */
export interface DeliveryAttemptRow {
  url: string;
  status: DeliveryStatus;
  /** A newer job holds its schedule (its next attempt is not due yet). */
  notDue: boolean;
  messageId: string;
  body: string;
  /** Seconds since the message was written or last retried by an operator. */
  ageS: number;
}

/** The outbox's deliveries (one per message and receiver) and the queue's jobs for them. */
@Injectable()
export class NotificationDeliveriesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async findForAttempt(deliveryId: string): Promise<DeliveryAttemptRow | undefined> {
    return this.db
      .createQueryBuilder(NotificationDelivery, 'd')
      .innerJoin(NotificationMessage, 'm', 'm.id = d.messageId')
      .select('d.url', 'url')
      .addSelect('d.status', 'status')
      .addSelect(`d.nextAttemptAt > now() + interval '5 seconds'`, 'notDue')
      .addSelect('m.id', 'messageId')
      .addSelect('m.body', 'body')
      .addSelect('extract(epoch FROM now() - d.retryFrom)::float8', 'ageS')
      .where('d.id = :deliveryId', { deliveryId })
      .getRawOne<DeliveryAttemptRow>();
  }

  async markDelivered(deliveryId: string): Promise<void> {
    await this.db.getRepository(NotificationDelivery).update(
      { id: deliveryId, status: 'pending' },
      { status: 'delivered', attempts: () => 'attempts + 1', deliveredAt: () => 'now()', nextAttemptAt: null, lastError: null },
    );
  }

  /** `delayS` null: given up (failed); else the next attempt is due that many seconds from now. */
  async recordFailedAttempt(deliveryId: string, error: string, delayS: number | null): Promise<void> {
    await this.db.query(FAILED_ATTEMPT_SQL, [deliveryId, error, delayS]);
  }

  /** Newest first; `status` filters by the message's status. */
  async list(status: DeliveryStatus | undefined, limit: number): Promise<NotificationRow[]> {
    return this.db.query(LIST_SQL, [status ?? null, limit]);
  }

  /** Every delivery of message `id` pending again, due now; answers how many jobs were queued. */
  async retry(m: EntityManager, id: string): Promise<{ requeued: number; organisationId: string | null }> {
    const [row]: { requeued: number; organisationId: string | null }[] = await m.query(RETRY_SQL, [id]);
    return row;
  }

  async requeueLost(): Promise<void> {
    await this.db.query(REQUEUE_LOST_SQL);
  }

  /** Pending deliveries and the age of the oldest one's message (0 when none). */
  async backlog(): Promise<{ pending: number; oldestPendingAgeS: number }> {
    const row = await this.db
      .createQueryBuilder(NotificationDelivery, 'd')
      .innerJoin(NotificationMessage, 'm', 'm.id = d.messageId')
      .select('count(*)::int', 'pending')
      .addSelect('COALESCE(extract(epoch FROM now() - min(m.createdAt)), 0)::float8', 'oldestPendingAgeS')
      .where(`d.status = 'pending'`)
      .getRawOne<{ pending: number; oldestPendingAgeS: number }>();
    return row!;
  }
}
