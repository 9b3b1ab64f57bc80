import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import { CurrencyCode } from './currency';

/** The most packs one checkout buys (spec §16.3). */
export const MAX_PACK_QUANTITY = 100;

export class CreateCreditCheckoutDto {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ example: 'tokens_1m', description: "A credit pack of the tier table's credit_packs (GET /api/billing/plans lists them)" })
  @IsString()
  @MaxLength(64)
  pack: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PACK_QUANTITY, example: 2, description: "How many packs (default 1); the grant is the pack's amount times this" })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_PACK_QUANTITY)
  quantity?: number;

  @ApiPropertyOptional({
    example: 'http://localhost:3000/billing/success?session_id={CHECKOUT_SESSION_ID}&credits=1',
    description: 'Absolute URL under APP_URL; default APP_URL/billing/success?session_id={CHECKOUT_SESSION_ID}&credits=1',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  success_url?: string;

  @ApiPropertyOptional({ example: 'http://localhost:3000/billing/cancel', description: 'Absolute URL under APP_URL; default APP_URL/billing/cancel' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  cancel_url?: string;

  @CurrencyCode("The session's currency: one of the pack price's currency options (GET /api/billing/plans?currency= shows the amounts; 400 currency_unavailable otherwise); default: the price's own currency.")
  currency?: string;
}

export class CreditCheckoutCreatedResponse {
  @ApiProperty({ example: 'cs_test_b1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  session_id: string;

  @ApiProperty({ example: 'https://checkout.stripe.com/c/pay/cs_test_b1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  url: string;
}
