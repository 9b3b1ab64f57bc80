import { Module } from '@nestjs/common';
import { LicensingModule } from '../licensing/licensing.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { CreditGrantsController } from './credit-grants.controller';
import { CreditJobs } from './credit-jobs';
import { CreditsAdminService } from './credits-admin.service';
import { CreditsController } from './credits.controller';
import { CreditsReadService } from './credits-read.service';
import { CreditsRepository } from './credits.repository';
import { CreditsService } from './credits.service';
import { ReservationsController } from './reservations.controller';
import { ReservationsService } from './reservations.service';

/**
 * Credits (spec §16): the grants and their ledger, consumption (inside licensing's usage write, through this
 * module's database functions), automatic top-ups, reservations, and their routes. Above licensing and
 * notifications; billing (top-ups) and the webhook (paid invoices) call CreditsService.
 */
@Module({
  imports: [LicensingModule, NotificationsModule],
  controllers: [CreditsController, CreditGrantsController, ReservationsController],
  providers: [CreditsRepository, CreditsService, CreditsReadService, CreditsAdminService, ReservationsService, CreditJobs],
  exports: [CreditsService, CreditsReadService, CreditsAdminService],
})
export class CreditsModule {}
