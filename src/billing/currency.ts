import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, Matches } from 'class-validator';

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
