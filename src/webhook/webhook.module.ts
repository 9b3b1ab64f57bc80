import { Module } from '@nestjs/common';
import { EventDispatcher } from './event-dispatcher';
import { InvoicePaidHandler } from './invoice-paid.handler';
import { SubscriptionCreatedHandler, SubscriptionDeletedHandler, SubscriptionUpdatedHandler } from './subscription.handlers';
import { WebhookController } from './webhook.controller';
import { WebhookSignatureGuard } from './webhook-signature.guard';

/** Verified, idempotent, order-safe processing of the payment provider's events (SPEC 6). */
@Module({
  controllers: [WebhookController],
  providers: [
    WebhookSignatureGuard,
    EventDispatcher,
    SubscriptionCreatedHandler,
    SubscriptionUpdatedHandler,
    SubscriptionDeletedHandler,
    InvoicePaidHandler,
  ],
  exports: [EventDispatcher],
})
export class WebhookModule {}
