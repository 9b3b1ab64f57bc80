import { DynamicModule, Global, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ErrorFilter } from './common/error.filter';
import { AppConfig } from './config/app-config';
import { AuditModule } from './audit/audit.module';
import { BillingModule } from './billing/billing.module';
import { ConsoleModule } from './console/console.module';
import { CreditsModule } from './credits/credits.module';
import { MetersModule } from './billing/meters/meters.module';
import { AppConfigModule } from './config/app-config.module';
import { DatabaseModule } from './database/database.module';
import { JobQueueModule } from './database/job-queue.module';
import { HealthModule } from './health/health.module';
import { RouteAuthGuard } from './identity/auth.guard';
import { IdentityModule } from './identity/identity.module';
import { MemberLimitPolicy } from './identity/member-limit.port';
import { LicensingModule } from './licensing/licensing.module';
import { LicensingService } from './licensing/licensing.service';
import { NotificationsModule } from './notifications/notifications.module';
import { NotificationsService } from './notifications/notifications.service';
import { OpsModule } from './ops/ops.module';
import { ProviderModule } from './provider/provider.module';
import { SandboxModule } from './sandbox/sandbox.module';
import { SandboxPaymentProvider } from './sandbox/sandbox-payment-provider';
import { LicenseChanges } from './subscriptions/license-changes.port';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { WebhookModule } from './webhook/webhook.module';

/**
 * The ports a lower module owns, each bound here to the upper module that implements it, so that no module
 * imports one above it (docs/architecture.md, "Layers"): identity asks licensing for the users limit in force,
 * and what may move a license tells notifications.
 */
@Global()
@Module({
  imports: [LicensingModule, NotificationsModule],
  providers: [
    { provide: MemberLimitPolicy, useExisting: LicensingService },
    { provide: LicenseChanges, useExisting: NotificationsService },
  ],
  exports: [MemberLimitPolicy, LicenseChanges],
})
class PortBindings {}

@Module({})
export class AppModule {
  /** `config.databaseUrl` must be resolved (main.ts starts the embedded database first when needed). */
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        DatabaseModule.forRoot(config),
        JobQueueModule,
        AuditModule,
        IdentityModule,
        ProviderModule.forRoot({ module: SandboxModule, adapter: SandboxPaymentProvider }),
        HealthModule,
        LicensingModule,
        CreditsModule,
        BillingModule,
        MetersModule,
        WebhookModule,
        SubscriptionsModule,
        NotificationsModule,
        OpsModule,
        ConsoleModule,
        PortBindings,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ErrorFilter },
        // Who may call each route: the route's declaration (src/common/route-auth.decorators.ts), read here.
        { provide: APP_GUARD, useClass: RouteAuthGuard },
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
        },
      ],
    };
  }
}
