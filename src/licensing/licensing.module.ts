import { Module } from '@nestjs/common';
import { BillingModule } from '../billing/billing.module';
import { LicenseWriter } from './license-writer';
import { LicensingController } from './licensing.controller';
import { LicensingService } from './licensing.service';
import { MemberLimitPolicy } from '../identity/member-limit.port';
import { UsageService } from './usage.service';

/** Licenses (the only writer), status, usage metering and limit enforcement (tiers come from AppConfig). */
@Module({
  imports: [BillingModule],
  controllers: [LicensingController],
  providers: [
    LicensingService,
    UsageService,
    LicenseWriter,
    { provide: MemberLimitPolicy, useExisting: LicensingService },
  ],
  exports: [LicensingService, LicenseWriter, MemberLimitPolicy],
})
export class LicensingModule {}
