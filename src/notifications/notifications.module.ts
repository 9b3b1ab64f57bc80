import { Module } from '@nestjs/common';
import { JobQueueTasks } from './job-queue';
import { NotificationDeliveriesRepository } from './notification-deliveries.repository';
import { NotificationDeliveryService } from './notification-delivery.service';
import { NotificationOutbox } from './notification-outbox.service';
import { NotificationWorker } from './notification-worker';
import { NotificationsRepository } from './notifications.repository';
import { NotificationsService } from './notifications.service';

/**
 * Outbound notifications to the web app (spec §10): messages decided in the transaction of each change
 * (NotificationsService, called by the webhook, the reconciliation and licensing's usage write), written
 * to an outbox in PostgreSQL and delivered by a PostgreSQL-backed job queue from any instance.
 */
@Module({
  providers: [
    NotificationsRepository,
    NotificationDeliveriesRepository,
    NotificationsService,
    NotificationDeliveryService,
    NotificationOutbox,
    NotificationWorker,
    JobQueueTasks,
  ],
  exports: [NotificationsService, NotificationOutbox, JobQueueTasks],
})
export class NotificationsModule {}
