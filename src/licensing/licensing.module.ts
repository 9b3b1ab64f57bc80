import { Module } from '@nestjs/common';
import { LicensingController } from './licensing.controller';
import { LicensingService } from './licensing.service';
import { MemberLimitPolicy } from '../identity/member-limit.port';
import { UsageService } from './usage.service';
import { NotificationsModule } from '../notifications/notifications.module';

/**
 * License status (derived from billing's subscriptions, see license-state.sql.ts), usage metering and
 * limit enforcement (tiers come from AppConfig).
 */
@Module({
  imports: [NotificationsModule],
  controllers: [LicensingController],
  providers: [
    LicensingService,
    UsageService,
    { provide: MemberLimitPolicy, useExisting: LicensingService },
  ],
  exports: [LicensingService, MemberLimitPolicy],
})
export class LicensingModule {}
