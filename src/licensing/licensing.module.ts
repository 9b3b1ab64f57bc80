import { Module } from '@nestjs/common';
import { LicensingController } from './licensing.controller';
import { EntitlementsService } from './entitlements.service';
import { OverridesController } from './overrides.controller';
import { OverridesRepository } from './overrides.repository';
import { OverridesService } from './overrides.service';
import { LicensingService } from './licensing.service';
import { MemberLimitPolicy } from '../identity/member-limit.port';
import { LicensingRepository } from './licensing.repository';
import { UsageRepository } from './usage.repository';
import { UsageBatchService } from './usage-batch.service';
import { UsageService } from './usage.service';
import { NotificationsModule } from '../notifications/notifications.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { EntitlementSigningKeys } from './signing-keys';
import { EntitlementTokenController } from './entitlement-token.controller';
import { EntitlementTokenService } from './entitlement-token.service';
import { ExplainController } from './explain.controller';
import { ExplainRepository } from './explain.repository';
import { ExplainService } from './explain.service';
import { WellKnownController } from './well-known.controller';

/**
 * License status (derived from billing's subscriptions, see licensing.repository.ts), usage metering and
 * limit enforcement (tiers come from AppConfig).
 */
@Module({
  imports: [NotificationsModule, SubscriptionsModule],
  controllers: [LicensingController, ExplainController, OverridesController, EntitlementTokenController, WellKnownController],
  providers: [
    LicensingRepository,
    LicensingService,
    EntitlementsService,
    OverridesRepository,
    OverridesService,
    UsageRepository,
    UsageService,
    UsageBatchService,
    EntitlementSigningKeys,
    EntitlementTokenService,
    ExplainRepository,
    ExplainService,
    { provide: MemberLimitPolicy, useExisting: LicensingService },
  ],
  exports: [LicensingService, EntitlementsService, OverridesService, ExplainService, MemberLimitPolicy],
})
export class LicensingModule {}
