import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BillingModule } from '../billing/billing.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { EventDispatcher } from './event-dispatcher';
import { CheckoutSessionAsyncPaymentSucceededHandler, CheckoutSessionCompletedHandler } from './checkout-session.handlers';
import { CustomerDeletedHandler } from './customer-deleted.handler';
import { InvoicePaidHandler, InvoicePaymentSucceededHandler } from './paid-invoice.handlers';
import { OrganisationLinks } from './organisation-links';
import { ProviderSync } from './provider-sync';
import { ProviderSyncSchedule } from './provider-sync.schedule';
import { ProviderSyncRunsRepository } from './provider-sync-runs.repository';
import { SyncSpillRepository } from './sync-spill.repository';
import { JobLeasesRepository } from './job-leases.repository';
import { ScheduleCanceledHandler, ScheduleCompletedHandler, ScheduleReleasedHandler, ScheduleUpdatedHandler } from './schedule.handlers';
import { SubscriptionCreatedHandler, SubscriptionDeletedHandler, SubscriptionUpdatedHandler, TrialWillEndHandler } from './subscription.handlers';
import { WebhookController } from './webhook.controller';
import { WebhookSignatureGuard } from './webhook-signature.guard';

/**
 * Verified, idempotent, order-safe processing of the payment provider's events (spec §6). It owns the
 * event ledger; the effects are asked of the modules that own the data (licensing, billing, identity).
 * A new event kind: a class with @HandlesEvent('type') added to `providers`.
 */
@Module({
  imports: [DiscoveryModule, SubscriptionsModule, BillingModule, NotificationsModule],
  controllers: [WebhookController],
  providers: [
    WebhookSignatureGuard,
    EventDispatcher,
    OrganisationLinks,
    SubscriptionCreatedHandler,
    SubscriptionUpdatedHandler,
    SubscriptionDeletedHandler,
    TrialWillEndHandler,
    ScheduleUpdatedHandler,
    ScheduleReleasedHandler,
    ScheduleCanceledHandler,
    ScheduleCompletedHandler,
    InvoicePaymentSucceededHandler,
    InvoicePaidHandler,
    CustomerDeletedHandler,
    CheckoutSessionCompletedHandler,
    CheckoutSessionAsyncPaymentSucceededHandler,
    ProviderSync,
    ProviderSyncSchedule,
    SyncSpillRepository,
    JobLeasesRepository,
    ProviderSyncRunsRepository,
  ],
  exports: [EventDispatcher, ProviderSync, ProviderSyncSchedule],
})
export class WebhookModule {}
