import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { transaction } from '../database/transaction';
import { AppConfig } from '../config/app-config';
import { NotificationBacklog, trackNotificationBacklog } from '../common/metrics';
import { NotificationDeliveriesRepository } from './notification-deliveries.repository';
import { DeliveryStatus } from './notification-delivery.entity';
import { displayUrl } from './notification-delivery.service';

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
    private readonly deliveries: NotificationDeliveriesRepository,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
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
    const rows = await this.deliveries.list(status, limit);
    return rows.map((r) => ({
      id: r.id,
      type: r.type,
      organisation_id: r.organisationId,
      version: r.version,
      status: r.status,
      created_at: r.createdAt.toISOString(),
      body: JSON.parse(r.body),
      deliveries: r.deliveries.map((d) => ({
        url: displayUrl(d.url),
        status: d.status,
        attempts: d.attempts,
        last_error: d.lastError,
        next_attempt_at: d.nextAttemptAt,
        delivered_at: d.deliveredAt,
      })),
    }));
  }

  /** Sends the message again to each of its URLs; answers how many deliveries were queued. */
  retry(id: string, by: AuditActor): Promise<{ id: string; requeued: number }> {
    return transaction(this.db, async (m) => {
      const { requeued, organisationId } = await this.deliveries.retry(m, id);
      if (!requeued) throw new AppException('notification_not_found', `No notification with webhook-id ${id}.`);
      await this.audit.record(m, by, { action: 'notification.retried', organisationId, after: { id, requeued } });
      return { id, requeued };
    });
  }

  backlog(): Promise<NotificationBacklog> {
    return this.deliveries.backlog();
  }
}
