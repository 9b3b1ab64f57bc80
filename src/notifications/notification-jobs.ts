import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { JobQueueTasks } from '../database/job-queue';
import { DELIVERY_TASK } from './notification-deliveries.repository';
import { NotificationDeliveryService } from './notification-delivery.service';
import { NotificationsService } from './notifications.service';

/**
 * Notifications on the job queue, with NOTIFY_URLS set: each delivery's attempts, and the minutely step (grace
 * and override expiries, lost jobs, old messages). The outbox writes add the delivery jobs (notifications.enqueue).
 */
@Injectable()
export class NotificationJobs implements OnModuleInit {
  private readonly logger = new Logger('Notifications');

  constructor(
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
    private readonly deliveries: NotificationDeliveryService,
    private readonly notifications: NotificationsService,
  ) {}

  onModuleInit(): void {
    if (!this.notifications.enabled) return;
    this.queue.register({
      tasks: { [DELIVERY_TASK]: (payload, helpers) => this.deliveries.attempt((payload as { delivery_id: string }).delivery_id, helpers.abortSignal) },
      minutely: () => this.notifications.minutely(),
      started: async () => this.logger.log(`notifications: sending to ${this.config.notifyUrls.length} URL(s)`),
    });
  }
}
