import { Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { SandboxController } from './sandbox.controller';
import { SandboxHttp } from './sandbox-http';
import { SandboxPortalController } from './sandbox-portal.controller';
import { SandboxDelivery } from './sandbox-delivery';
import { SandboxPaymentProvider } from './sandbox-payment-provider';
import { SandboxRepository } from './sandbox.repository';
import { SandboxStore } from './sandbox.store';
import { SandboxSubscriptions } from './sandbox-subscriptions';
import { SandboxUrls } from './sandbox-urls';

/**
 * The built-in sandbox payment provider (spec §8), an adapter of the PaymentProvider port (src/provider):
 * ProviderModule imports it and binds SandboxPaymentProvider to the port when PAYPROVIDER_SECRET_KEY is unset;
 * its pages answer 404 otherwise.
 */
@Module({
  controllers: [SandboxController, SandboxPortalController],
  providers: [SandboxHttp, SandboxRepository, SandboxStore, SandboxSubscriptions, SandboxUrls, SandboxDelivery, SandboxPaymentProvider],
  exports: [SandboxPaymentProvider, SandboxSubscriptions, SandboxStore, SandboxDelivery],
})
export class SandboxModule implements OnApplicationBootstrap {
  constructor(private readonly config: AppConfig) {}

  onApplicationBootstrap() {
    if (this.config.providerSecretKey) return;
    const base = this.config.publicUrl?.origin ?? `http://localhost:${this.config.port}`;
    new Logger('Billing').log(
      `payments: sandbox mode (PAYPROVIDER_SECRET_KEY is unset): checkouts open pages on ${base}/sandbox/… and no real payment is taken`,
    );
  }
}
