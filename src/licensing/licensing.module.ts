import { Module } from '@nestjs/common';
import { LicensingController } from './licensing.controller';
import { EntitlementsService } from './entitlements.service';
import { OverridesController } from './overrides.controller';
import { OverridesRepository } from './overrides.repository';
import { OverridesService } from './overrides.service';
import { LicensingService } from './licensing.service';
import { LicensingRepository } from './licensing.repository';
import { UsageRepository } from './usage.repository';
import { UsageBatchService } from './usage-batch.service';
import { UsageCommits } from './usage-commits';
import { UsageService } from './usage.service';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { EntitlementSigningKeys } from './signing-keys';
import { EntitlementTokenController } from './entitlement-token.controller';
import { EntitlementTokenService } from './entitlement-token.service';
import { ExplainController } from './explain.controller';
import { ExplainRepository } from './explain.repository';
import { ExplainService } from './explain.service';
import { WellKnownController } from './well-known.controller';
import { PlansController } from './plans.controller';
import { PlansRepository } from './plans.repository';
import { PlansService } from './plans.service';
import { PlanMigrationsService } from './plan-migrations.service';

/**
 * The license (licensing.license_state, see license-state.ts: derived from the organisation's subscriptions, its
 * tier table and its overrides), its reads (status, entitlements, checks, explain, signed tokens), usage
 * metering and limit enforcement, the overrides, and the plan versions' admin reads (the list, the migration preview) and migrations' start and read. Tells identity the users limit in force (MemberLimitPolicy,
 * bound by the root module).
 */
@Module({
  imports: [SubscriptionsModule],
  controllers: [LicensingController, ExplainController, OverridesController, EntitlementTokenController, WellKnownController, PlansController],
  providers: [
    LicensingRepository,
    LicensingService,
    EntitlementsService,
    OverridesRepository,
    OverridesService,
    UsageRepository,
    UsageService,
    UsageCommits,
    UsageBatchService,
    EntitlementSigningKeys,
    EntitlementTokenService,
    ExplainRepository,
    ExplainService,
    PlansRepository,
    PlansService,
    PlanMigrationsService,
  ],
  exports: [LicensingService, EntitlementsService, OverridesService, ExplainService, UsageService, UsageCommits, PlansService, PlanMigrationsService],
})
export class LicensingModule {}
