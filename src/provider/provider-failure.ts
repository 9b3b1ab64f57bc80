import { AppException } from '../common/app-exception';
import { PaymentProviderError } from './payment-provider.port';

/**
 * Any provider failure the caller cannot fix becomes a 500 (the seed's status for a provider error); a spent
 * request budget (the provider's 429, or PAYPROVIDER_MAX_RPS) is a 503 with Retry-After instead: nothing failed,
 * it is only too early. The cause was logged by the adapter. Non-provider errors pass through untouched.
 */
export function providerFailure(err: unknown): unknown {
  if (!(err instanceof PaymentProviderError)) return err;
  if (err.kind === 'rate_limited') {
    const retryAfterS = err.retryAfterS ?? 1;
    return new AppException('payment_provider_busy', `The payment provider is busy; try again in ${retryAfterS} s.`, { retryAfterS });
  }
  return new AppException('payment_provider_error', 'The payment provider could not complete the request. Try again later.');
}

/**
 * For a subscription change (spec §11.4): what the customer can act on keeps the provider's message (a payment
 * that failed: 402; a tax location missing, or a proration_date outside the current period: 400); a spent
 * budget is the 503 above; anything else is 502 provider_error. In every case the change was not made.
 */
export function changeFailure(err: unknown): unknown {
  if (!(err instanceof PaymentProviderError)) return err;
  if (err.kind === 'payment_failed') return new AppException('payment_failed', err.message);
  if (err.kind === 'tax_location_invalid') return new AppException('tax_location_invalid', err.message);
  if (err.kind === 'rejected' && err.param === 'proration_date') return new AppException('invalid_proration_date', err.message);
  if (err.kind === 'rate_limited') return providerFailure(err);
  return new AppException('provider_error', 'The payment provider could not make this change; nothing was changed. Try again later.');
}
