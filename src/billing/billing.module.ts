import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { BillingController } from './billing.controller';
import { CallerLimits } from './caller-limits';
import { CheckoutService } from './checkout.service';
import { HistoryService } from './history.service';
import { BillingHistoryRepository } from './billing-history.repository';
import { OpenCheckoutsRepository } from './open-checkouts.repository';
import { createPaymentProvider } from './payment-provider.factory';
import { PaymentProvider } from './payment-provider.port';
import { PortalService } from './portal.service';
import { PlansService } from './plans.service';
import { PriceCatalog } from './price-catalog';
import { ProviderSubscriptions } from './provider-subscriptions.service';
import { ProviderSubscriptionsRepository } from './provider-subscriptions.repository';
import { ReturnPagesController } from './return-pages.controller';
import { CheckoutReportService } from './checkout-report.service';
import { SandboxModule } from './sandbox/sandbox.module';
import { SandboxPaymentProvider } from './sandbox/sandbox-payment-provider';

/**
 * The plan list and its prices; checkout, portal, checkout-session report and billing history; the pages a buyer returns to; the
 * provider subscriptions tied to an organisation. The provider is reached only through the PaymentProvider port.
 */
@Module({
  imports: [SandboxModule],
  controllers: [BillingController, ReturnPagesController],
  providers: [
    { provide: PaymentProvider, useFactory: createPaymentProvider, inject: [AppConfig, SandboxPaymentProvider] },
    CallerLimits,
    CheckoutReportService,
    CheckoutService,
    PortalService,
    PlansService,
    PriceCatalog,
    HistoryService,
    BillingHistoryRepository,
    OpenCheckoutsRepository,
    ProviderSubscriptions,
    ProviderSubscriptionsRepository,
  ],
  exports: [PaymentProvider, HistoryService, ProviderSubscriptions, PriceCatalog, CallerLimits],
})
export class BillingModule {}
