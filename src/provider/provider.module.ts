import { DynamicModule, Module, Type } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { CallerLimits } from './caller-limits';
import { createPaymentProvider } from './payment-provider.factory';
import { PaymentProvider } from './payment-provider.port';
import { PriceCatalog } from './price-catalog';

/**
 * The payment provider, for every module: the PaymentProvider port bound to its adapter (createPaymentProvider
 * picks the Stripe adapter or the sandbox), the tiers' prices as the provider has them (PriceCatalog) and each
 * user's share of the provider's request budget (CallerLimits). Global, like the configuration.
 *
 * The sandbox (src/sandbox) implements the port, so it stands above this module: the application's root
 * module passes it in (`forRoot`), and nothing here imports it.
 */
@Module({})
export class ProviderModule {
  static forRoot(sandbox: { module: Type; adapter: Type<PaymentProvider> }): DynamicModule {
    return {
      module: ProviderModule,
      global: true,
      imports: [sandbox.module],
      providers: [{ provide: PaymentProvider, useFactory: createPaymentProvider, inject: [AppConfig, sandbox.adapter] }, PriceCatalog, CallerLimits],
      exports: [PaymentProvider, PriceCatalog, CallerLimits],
    };
  }
}
