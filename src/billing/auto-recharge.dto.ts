import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import { MAX_GRANT_AMOUNT } from '../credits/credits.service';

/** The most automatic top-ups a calendar month (spec §16.4). */
export const MAX_MONTHLY_RECHARGES = 100;

export class SaveAutoRechargeDto {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ example: 'ai_tokens', description: 'A metric whose policy is credits' })
  @IsString()
  @MaxLength(64)
  metric: string;

  @ApiProperty({ example: 'tokens_1m', description: "A credit pack of the tier table's credit_packs, for this metric (GET /api/billing/plans lists them)" })
  @IsString()
  @MaxLength(64)
  pack: string;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_GRANT_AMOUNT, example: 100000, description: 'A report leaving `available` below this buys one pack' })
  @IsInt()
  @Min(0)
  @Max(MAX_GRANT_AMOUNT)
  threshold: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_MONTHLY_RECHARGES, example: 5, description: 'The most packs bought so in a calendar month (UTC)' })
  @IsInt()
  @Min(1)
  @Max(MAX_MONTHLY_RECHARGES)
  monthly_limit: number;
}

export class AutoRechargeQuery {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ example: 'ai_tokens' })
  @IsString()
  @MaxLength(64)
  metric: string;
}
