import { Module } from '@nestjs/common';
import { BillingController } from './billing.controller';
import { CheckoutService } from './checkout.service';
import { HistoryService } from './history.service';
import { BillingHistoryRepository } from './billing-history.repository';
import { OpenCheckoutsRepository } from './open-checkouts.repository';
import { PortalService } from './portal.service';
import { PlansService } from './plans.service';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { ReturnPagesController } from './return-pages.controller';
import { CheckoutReportService } from './checkout-report.service';
import { CreditCheckoutService } from './credit-checkout.service';
import { CreditPurchasesController } from './credit-purchases.controller';
import { CustomerRecords } from './customer-records.service';
import { CreditTopUpsService } from './credit-top-ups.service';
import { CreditsModule } from '../credits/credits.module';
import { LicensingModule } from '../licensing/licensing.module';
import { AutoRechargeJobs } from './auto-recharge.jobs';
import { AutoRechargeService } from './auto-recharge.service';

/**
 * The plan list and its prices; checkout, portal, checkout-session report and billing history; buying credit packs;
 * the pages a buyer returns to. The provider is reached only through the PaymentProvider port (src/provider).
 */
@Module({
  imports: [SubscriptionsModule, CreditsModule, LicensingModule],
  controllers: [BillingController, CreditPurchasesController, ReturnPagesController],
  providers: [
    AutoRechargeJobs,
    AutoRechargeService,
    CheckoutReportService,
    CheckoutService,
    CreditCheckoutService,
    CreditTopUpsService,
    CustomerRecords,
    PortalService,
    PlansService,
    HistoryService,
    BillingHistoryRepository,
    OpenCheckoutsRepository,
  ],
  exports: [HistoryService, CreditTopUpsService],
})
export class BillingModule {}
