import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { LicensingModule } from '../licensing/licensing.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { WebhookModule } from '../webhook/webhook.module';
import { ConsoleAuthRepository } from './console-auth.repository';
import { ConsoleAuthService } from './console-auth.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { ConsoleOidcService } from './console-oidc.service';
import { ConsolePlansController } from './console-plans.controller';
import { ConsolePlansService } from './console-plans.service';
import { ConsoleSessionGuard } from './console-session.guard';
import { ConsoleViews } from './console-views';
import { ConsoleController } from './console.controller';
import { ConsoleRepository } from './console.repository';
import { ConsoleService } from './console.service';
import { SignInController } from './sign-in.controller';

/**
 * The operator console (spec §14): server-rendered pages under /console for the people who run the service,
 * with a sign-in of their own. It reads across the modules' tables (ConsoleRepository) and changes nothing
 * itself: its actions call the owning modules' services, which audit them.
 */
@Module({
  imports: [CreditsModule, LicensingModule, NotificationsModule, WebhookModule],
  controllers: [SignInController, ConsoleController, ConsolePlansController],
  providers: [ConsoleAuthRepository, ConsoleAuthService, ConsoleOidcService, ConsoleSessionGuard, ConsoleExceptionFilter, ConsoleViews, ConsoleRepository, ConsoleService, ConsolePlansService],
  exports: [ConsoleAuthService],
})
export class ConsoleModule {}
