import { ApiProperty } from '@nestjs/swagger';

/** Seed 2.1: the outcome of a completed checkout session. */
export class CheckoutSessionResult {
  @ApiProperty({ example: 'cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY' })
  session_id: string;

  @ApiProperty({ example: 2900, description: 'Integer minor units' })
  amount_total: number;

  @ApiProperty({ example: 'EUR', description: 'ISO currency code, upper case' })
  currency: string;

  @ApiProperty({ example: 'pro', nullable: true, type: String, description: "The checkout's metadata.tier" })
  tier: string | null;

  @ApiProperty({ example: 1763790000, description: 'Unix seconds' })
  created: number;
}
