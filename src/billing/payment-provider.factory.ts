import { AppConfig } from '../config/app-config';
import { PaymentProvider } from './payment-provider.port';
import { StripePaymentProvider } from './stripe.provider';

/**
 * The one place that picks the adapter behind the PaymentProvider port. Without PAYPROVIDER_SECRET_KEY:
 * the built-in sandbox (SPEC 8), so that `npm start` sells on a laptop.
 */
export function createPaymentProvider(config: AppConfig, sandbox: PaymentProvider): PaymentProvider {
  if (config.providerSecretKey) return new StripePaymentProvider(config);
  return sandbox;
}
