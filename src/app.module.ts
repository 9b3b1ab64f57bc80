import { DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ErrorFilter } from './common/error.filter';
import { SessionAuthGuard } from './common/session-auth.guard';
import { AppConfig } from './config/app-config';
import { BillingModule } from './billing/billing.module';
import { AppConfigModule } from './config/app-config.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { IdentityModule } from './identity/identity.module';
import { LicensingModule } from './licensing/licensing.module';
import { OpsModule } from './ops/ops.module';
import { WebhookModule } from './webhook/webhook.module';

@Module({})
export class AppModule {
  /** `config.databaseUrl` must be resolved (main.ts starts the embedded database first when needed). */
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        DatabaseModule.forRoot(config),
        IdentityModule,
        HealthModule,
        LicensingModule,
        BillingModule,
        WebhookModule,
        OpsModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ErrorFilter },
        { provide: APP_GUARD, useClass: SessionAuthGuard },
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
        },
      ],
    };
  }
}
