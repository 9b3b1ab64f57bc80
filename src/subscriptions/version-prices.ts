import { PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';

/** How a provider request is made (a migration's within its RequestPace; a change's at once). */
type Ask = <T>(call: () => Promise<T>) => Promise<T>;

/**
 * A plan version's price ids by interval, as the provider describes each price (spec §17): in the version's
 * order, the first recurring price of each interval. A price the provider does not know is left out (its interval
 * then has no price); any other provider error passes to the caller.
 */
export async function pricesByInterval(provider: PaymentProvider, ids: string[], ask: Ask = (call) => call()): Promise<Map<string, string>> {
  const byInterval = new Map<string, string>();
  for (const id of ids) {
    const price = await ask(() => provider.retrievePrice(id)).catch((err: unknown) => {
      if (err instanceof PaymentProviderError && err.kind === 'not_found') return undefined;
      throw err;
    });
    if (price?.recurring && !byInterval.has(price.recurring.interval)) byInterval.set(price.recurring.interval, id);
  }
  return byInterval;
}
