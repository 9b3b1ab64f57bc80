import { AppConfig } from '../config/app-config';
import { PaymentProvider } from './payment-provider.port';
import { StripePaymentProvider } from './stripe.provider';
import { UnconfiguredPaymentProvider } from './unconfigured.provider';

/** The one place that picks the adapter behind the PaymentProvider port. */
export function createPaymentProvider(config: AppConfig): PaymentProvider {
  if (config.providerSecretKey) return new StripePaymentProvider(config);
  return new UnconfiguredPaymentProvider();
}
