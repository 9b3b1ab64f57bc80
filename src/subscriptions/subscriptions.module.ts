import { Module } from '@nestjs/common';
import { SubscriptionChangeOutcomes } from './change-outcomes';
import { PendingUsersLimits } from './pending-users-limit';
import { PlanVersionsRepository } from './plan-versions.repository';
import { PlanVersionsService } from './plan-versions.service';
import { PlanMigrationRuns } from './plan-migration-runs';
import { PlanMigrationsRepository } from './plan-migrations.repository';
import { SubscriptionClaims } from './subscription-claims';
import { SubscriptionClaimsRepository } from './subscription-claims.repository';
import { SubscriptionChangesService } from './subscription-changes.service';
import { SubscriptionController } from './subscription.controller';
import { SubscriptionsRepository } from './subscriptions.repository';
import { SubscriptionsService } from './subscriptions.service';

/**
 * The provider subscriptions tied to an organisation (table provider_subscriptions) and the rules that keep
 * them: the reading of a provider subscription object, event order, when grace starts, what a schedule holds,
 * tier resolution, the plan versions (plan_versions, recorded at start) and plan migrations (plan_migrations, run on the job queue); and the organisation's subscription read and changes (spec §11.4, one change at a time per
 * organisation: subscription_change_claims). The webhook, the reconciliation and checkout call
 * SubscriptionsService; licensing reads the subscriptions through the database function this module owns.
 * The provider is reached through the PaymentProvider port; LicenseChanges is the port it tells.
 */
@Module({
  controllers: [SubscriptionController],
  providers: [
    SubscriptionsRepository,
    SubscriptionsService,
    SubscriptionChangesService,
    SubscriptionClaims,
    SubscriptionClaimsRepository,
    PendingUsersLimits,
    SubscriptionChangeOutcomes,
    PlanVersionsRepository,
    PlanVersionsService,
    PlanMigrationsRepository,
    PlanMigrationRuns,
  ],
  exports: [SubscriptionsService, PendingUsersLimits, SubscriptionChangeOutcomes, PlanVersionsService, PlanMigrationRuns],
})
export class SubscriptionsModule {}
