import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { NotificationBacklog, trackNotificationBacklog } from '../ops/metrics';
import { DELIVERY_TASK } from './job-queue';
import { DeliveryStatus } from './notification-delivery.entity';
import { displayUrl } from './notification-delivery.service';

/** A message's status: pending while any delivery is, else failed when any gave up, else delivered. */
const MESSAGE_STATUS_SQL = `
  CASE WHEN bool_or(d.status = 'pending') THEN 'pending' WHEN bool_or(d.status = 'failed') THEN 'failed' ELSE 'delivered' END`;

const LIST_SQL = `
  SELECT m.id, m.type, m.organisation_id, m.version, m.body, m.created_at, ${MESSAGE_STATUS_SQL} AS status,
         json_agg(json_build_object('url', d.url, 'status', d.status, 'attempts', d.attempts, 'last_error', d.last_error,
                                    'next_attempt_at', d.next_attempt_at, 'delivered_at', d.delivered_at) ORDER BY d.url) AS deliveries
  FROM notification_messages m JOIN notification_deliveries d ON d.message_id = m.id
  GROUP BY m.id
  HAVING $1::text IS NULL OR ${MESSAGE_STATUS_SQL} = $1::text
  ORDER BY m.created_at DESC, m.version DESC
  LIMIT $2`;

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
  SELECT count(j.id)::int AS requeued
  FROM d, LATERAL graphile_worker.add_job('${DELIVERY_TASK}', json_build_object('delivery_id', d.id),
                                          job_key => '${DELIVERY_TASK}:' || d.id) AS j`;

export interface ListedNotification {
  id: string;
  type: string;
  organisation_id: string;
  version: number;
  status: DeliveryStatus;
  created_at: string;
  body: unknown;
  deliveries: { url: string; status: DeliveryStatus; attempts: number; last_error: string | null; next_attempt_at: string | null; delivered_at: string | null }[];
}

/** The outbox for operators: `notifications:list`, `notifications:retry`, and the backlog in /metrics. */
@Injectable()
export class NotificationOutbox implements OnModuleInit, OnModuleDestroy {
  private untrack?: () => void;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  onModuleInit() {
    // Without NOTIFY_URLS there is no backlog: a scrape costs no query.
    if (this.config.notifyUrls.length) this.untrack = trackNotificationBacklog(() => this.backlog());
  }

  onModuleDestroy() {
    this.untrack?.();
  }

  /** Newest first; `status` filters by the message's status. */
  async list(status: DeliveryStatus | undefined, limit: number): Promise<ListedNotification[]> {
    const rows = await this.db.query(LIST_SQL, [status ?? null, limit]);
    return rows.map((r: Record<string, any>) => ({
      id: r.id,
      type: r.type,
      organisation_id: r.organisation_id,
      version: Number(r.version),
      status: r.status,
      created_at: new Date(r.created_at).toISOString(),
      body: JSON.parse(r.body),
      deliveries: r.deliveries.map((d: ListedNotification['deliveries'][number]) => ({ ...d, url: displayUrl(d.url) })),
    }));
  }

  /** Sends the message again to each of its URLs; answers how many deliveries were queued. */
  async retry(id: string): Promise<{ id: string; requeued: number }> {
    const [{ requeued }] = await this.db.query(RETRY_SQL, [id]);
    if (!requeued) throw new AppException('notification_not_found', `No notification with webhook-id ${id}.`);
    return { id, requeued };
  }

  async backlog(): Promise<NotificationBacklog> {
    const [row] = await this.db.query(
      `SELECT count(*)::int AS pending, COALESCE(extract(epoch FROM now() - min(m.created_at)), 0)::float8 AS age
       FROM notification_deliveries d JOIN notification_messages m ON m.id = d.message_id WHERE d.status = 'pending'`,
    );
    return { pending: row.pending, oldestPendingAgeS: row.age };
  }
}
