import { Module } from '@nestjs/common';
import { NotificationDeliveriesRepository } from './notification-deliveries.repository';
import { NotificationDeliveryService } from './notification-delivery.service';
import { NotificationJobs } from './notification-jobs';
import { NotificationOutbox } from './notification-outbox';
import { NotificationsRepository } from './notifications.repository';
import { NotificationsService } from './notifications.service';

/**
 * Outbound notifications to the web app (spec §10): messages decided in the transaction of each change
 * (NotificationsService: the LicenseChanges port the lower modules tell, the webhook's trial notice, and
 * notifications.capacity_crossed, which licensing's usage write calls), written to an outbox in PostgreSQL and
 * delivered by the job queue from any instance.
 */
@Module({
  providers: [NotificationsRepository, NotificationDeliveriesRepository, NotificationsService, NotificationDeliveryService, NotificationOutbox, NotificationJobs],
  exports: [NotificationsService, NotificationOutbox],
})
export class NotificationsModule {}
