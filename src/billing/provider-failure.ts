import { AppException } from '../common/app-exception';
import { PaymentProviderError } from './payment-provider.port';

/**
 * Any provider failure the caller cannot fix becomes a 500 (the seed's status for a provider error);
 * the cause was logged by the adapter. Non-provider errors pass through untouched.
 */
export function providerFailure(err: unknown): unknown {
  if (!(err instanceof PaymentProviderError)) return err;
  return new AppException('payment_provider_error', 'The payment provider could not complete the request. Try again later.');
}
