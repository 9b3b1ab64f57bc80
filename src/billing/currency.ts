import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, Matches } from 'class-validator';
import { AppException } from '../common/app-exception';
import { PaymentProviderError } from '../provider/payment-provider.port';
import { PriceCatalog } from '../provider/price-catalog';

/**
 * An optional ISO 4217 currency code, in any case (`EUR`, `eur`): three letters, read as lower case, the way
 * the provider writes currencies; anything else is a 400 validation_failed.
 */
export function CurrencyCode(description: string) {
  return applyDecorators(
    ApiPropertyOptional({ example: 'eur', pattern: '^[A-Za-z]{3}$', description: `${description} ISO 4217 code, any case.` }),
    IsOptional(),
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value)),
    Matches(/^[a-z]{3}$/, { message: 'currency must be a three-letter ISO 4217 code (e.g. eur)' }),
  );
}

/**
 * A checkout's currency (a subscription's or a credit pack's, spec §17): a currency the sold price has no option
 * of is refused before the provider is asked. A price the catalog never read (the provider was unreachable since
 * the start) is left to the provider, whose refusal `currencyRefusal` turns into the same answer.
 */
export function requireCurrency(catalog: PriceCatalog, priceId: string | undefined, currency: string): void {
  if (priceId === undefined || catalog.sellsIn(priceId, currency) !== false) return;
  throw new AppException('currency_unavailable', `The price ${priceId} is not sold in ${currency.toUpperCase()}: the payment provider has no currency option of it.`);
}

/** The provider's refusal of a session's currency (its 400 naming `currency`), as 400 currency_unavailable. */
export function currencyRefusal(err: unknown, currency: string | undefined): AppException | undefined {
  if (currency === undefined || !(err instanceof PaymentProviderError && err.kind === 'rejected' && err.param === 'currency')) return undefined;
  return new AppException('currency_unavailable', `The price is not sold in ${currency.toUpperCase()} (the payment provider says: ${err.message})`);
}
