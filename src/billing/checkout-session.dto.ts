import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** Seed 2.1: the outcome of a completed checkout session. */
export class CheckoutSessionResult {
  @ApiProperty({ example: 'cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  session_id: string;

  @ApiProperty({ example: 2900, description: 'Integer minor units' })
  amount_total: number;

  @ApiProperty({ example: 'EUR', description: 'ISO currency code, upper case' })
  currency: string;

  @ApiProperty({ example: 'pro', nullable: true, type: String, description: "The checkout's metadata.tier; null for a credit pack's checkout" })
  tier: string | null;

  @ApiPropertyOptional({ example: 'tokens_1m', description: "Only for a credit pack's checkout (spec §16.3): the pack bought" })
  pack?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, example: 2, description: "Only for a credit pack's checkout: how many packs" })
  quantity?: number;

  @ApiProperty({ example: 1763790000, description: 'Unix seconds' })
  created: number;
}
