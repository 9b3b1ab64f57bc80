import { Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { PaymentProvider } from './payment-provider.port';
import { ProviderBudget } from './provider-budget';
import { StripePaymentProvider } from './stripe.provider';

/**
 * How long a provider request may wait for its slot in PAYPROVIDER_MAX_RPS before it fails (503 with Retry-After):
 * about what a person waits for a checkout page before giving up, and one attempt's timeout.
 */
const BUDGET_MAX_WAIT_MS = 10_000;

/**
 * The one place that picks the adapter behind the PaymentProvider port. Without PAYPROVIDER_SECRET_KEY:
 * the built-in sandbox (spec §8), so that `npm start` sells on a laptop. Production refuses to start that
 * way unless PAYPROVIDER_SANDBOX=true (config), and then says so at every start.
 */
export function createPaymentProvider(config: AppConfig, sandbox: PaymentProvider): PaymentProvider {
  if (config.provider === 'stripe') {
    return new StripePaymentProvider(config, new ProviderBudget({ maxRps: config.providerMaxRps, maxWaitMs: BUDGET_MAX_WAIT_MS }));
  }
  if (config.nodeEnv === 'production') {
    new Logger('PaymentProvider').warn(
      'PAYPROVIDER_SANDBOX=true: the sandbox provider runs in production; anyone can "pay" for any tier',
    );
  }
  return sandbox;
}
