import { Module } from '@nestjs/common';
import { BillingModule } from '../billing.module';
import { MeterDelivery } from './meter-delivery';
import { MeterReport } from './meter-report';
import { MetersRepository } from './meters.repository';

/**
 * Provider meters (spec §13): the usage licensing accepts, summed per window in its own write (through
 * billing.meter_usage, this module's function) and delivered to the provider's billing meter by the job queue. In
 * billing, because what it owns is a record of what the provider is told to charge.
 */
@Module({
  imports: [BillingModule],
  providers: [MetersRepository, MeterDelivery, MeterReport],
  exports: [MeterReport],
})
export class MetersModule {}
