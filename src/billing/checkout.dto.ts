import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import { INTERVALS, MAX_SEATS } from '../subscriptions/subscription.dto';
import { CurrencyCode } from './currency';

export class CreateCheckoutDto {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ example: 'pro', description: 'A paid tier of the tier table (not free)' })
  @IsString()
  @MaxLength(64)
  tier: string;

  @ApiPropertyOptional({ enum: INTERVALS, example: 'month', description: "The tier's price with this interval; default: its first listed price" })
  @IsOptional()
  @IsIn(INTERVALS)
  interval?: (typeof INTERVALS)[number];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    example: 5,
    description: "Only for a per-seat tier, at most its max; default: the organisation's member count (at least 1)",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_SEATS)
  seats?: number;

  @CurrencyCode("The session's currency: one of the price's currency options (GET /api/billing/plans?currency= shows the amounts; 400 currency_unavailable otherwise); default: the price's own currency.")
  currency?: string;

  @ApiPropertyOptional({
    example: 'http://localhost:3000/billing/success?session_id={CHECKOUT_SESSION_ID}',
    description: 'Absolute URL under APP_URL; default APP_URL/billing/success?session_id={CHECKOUT_SESSION_ID}',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  success_url?: string;

  @ApiPropertyOptional({
    example: 'http://localhost:3000/billing/cancel',
    description: 'Absolute URL under APP_URL; default APP_URL/billing/cancel',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  cancel_url?: string;
}

export class CheckoutCreatedResponse {
  @ApiProperty({ example: 'cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  session_id: string;

  @ApiProperty({ example: 'https://checkout.stripe.com/c/pay/cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  url: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 14, description: 'Days of trial this checkout gives; 0 when none' })
  trial_days: number;
}
