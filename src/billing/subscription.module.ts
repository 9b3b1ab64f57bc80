import { Module } from '@nestjs/common';
import { WebhookModule } from '../webhook/webhook.module';
import { BillingModule } from './billing.module';
import { SubscriptionClaims } from './subscription-claims';
import { SubscriptionChangesRepository } from './subscription-changes.repository';
import { SubscriptionController } from './subscription.controller';
import { SubscriptionService } from './subscription.service';

/**
 * The organisation's subscription and its changes (spec §11.4). Its own module because it uses both billing
 * (the provider, the subscriptions, the prices) and the webhook's application of what the provider says a
 * subscription is now, which itself builds on billing.
 */
@Module({
  imports: [BillingModule, WebhookModule],
  controllers: [SubscriptionController],
  providers: [SubscriptionService, SubscriptionClaims, SubscriptionChangesRepository],
})
export class SubscriptionModule {}
