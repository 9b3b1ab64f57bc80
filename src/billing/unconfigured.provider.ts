import { CheckoutSessionInfo, PaymentProvider, PaymentProviderError } from './payment-provider.port';

/**
 * Stands in while no PAYPROVIDER_SECRET_KEY is set: every call fails as 'unavailable' (→ 500), so a
 * misconfigured deployment says so instead of pretending to sell. The sandbox adapter replaces it.
 */
export class UnconfiguredPaymentProvider extends PaymentProvider {
  readonly name = 'unconfigured';
  readonly requiresPriceIds = false;

  retrieveCheckoutSession(): Promise<CheckoutSessionInfo> {
    return Promise.reject(unconfigured());
  }

  createCheckoutSession(): Promise<{ id: string; url: string }> {
    return Promise.reject(unconfigured());
  }

  createPortalSession(): Promise<{ url: string }> {
    return Promise.reject(unconfigured());
  }
}

const unconfigured = () => new PaymentProviderError('unavailable', 'no payment provider is configured (PAYPROVIDER_SECRET_KEY)');
