import { Module } from '@nestjs/common';
import { NotificationsModule } from '../../notifications/notifications.module';
import { BillingModule } from '../billing.module';
import { MeterDelivery } from './meter-delivery.service';
import { MeterReport } from './meter-report.service';
import { MetersRepository } from './meters.repository';

/**
 * Provider meters (spec §13): the usage licensing accepts, summed per window in its own write (the fragment
 * in meters.repository.ts) and delivered to the provider's billing meter by the job queue. In billing, because
 * what it owns is a record of what the provider is told to charge; licensing only embeds the fragment.
 */
@Module({
  imports: [BillingModule, NotificationsModule],
  providers: [MetersRepository, MeterDelivery, MeterReport],
  exports: [MeterReport],
})
export class MetersModule {}
