import { Module } from '@nestjs/common';
import { LicensingController } from './licensing.controller';
import { LicensingService } from './licensing.service';
import { MemberLimitService } from './member-limit.service';
import { ServiceKeyGuard, ServiceKeyOrSessionGuard, ServiceKeys } from './service-key.guard';
import { UsageService } from './usage.service';

/** License status, usage metering and limit enforcement (tiers come from AppConfig). */
@Module({
  controllers: [LicensingController],
  providers: [LicensingService, UsageService, MemberLimitService, ServiceKeys, ServiceKeyGuard, ServiceKeyOrSessionGuard],
  exports: [LicensingService, MemberLimitService],
})
export class LicensingModule {}
