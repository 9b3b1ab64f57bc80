import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsUUID, Matches, Max, Min, NotEquals } from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';
import { METERED_METRICS, MeteredMetric, Metric, METRICS } from '../config/tiers';

// Larger reports are bugs on the reporting side, not usage.
export const MAX_AMOUNT = 1_000_000_000_000;

export class OrganisationQuery {
  // A repeated parameter arrives as an array and fails here, as it should.
  @ApiProperty({ format: 'uuid', description: 'Organisation to report on' })
  @IsUUID()
  organisation_id: string;
}

export class CheckQuery extends OrganisationQuery {
  @ApiProperty({ enum: METRICS })
  @IsIn(METRICS)
  metric: Metric;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_AMOUNT, default: 1 })
  @IsOptional()
  @QueryInt({ min: 1, max: MAX_AMOUNT })
  amount: number = 1;
}

export class UsageReportBody {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ enum: METERED_METRICS, example: 'ai_tokens' })
  @IsIn(METERED_METRICS)
  metric: MeteredMetric;

  @ApiProperty({
    type: 'integer',
    minimum: -MAX_AMOUNT,
    maximum: MAX_AMOUNT,
    description: 'A JSON integer, not 0. Negative only for projects (a removed project); the count stops at 0.',
    example: 1,
  })
  @IsInt()
  @NotEquals(0)
  @Min(-MAX_AMOUNT)
  @Max(MAX_AMOUNT)
  amount: number;

  @ApiPropertyOptional({
    description: 'Reports with the same key for the same organisation count once (for at least 24 hours); the repeat gets the first answer.',
    maxLength: 255,
    example: 'run-7d1f0c2e-step-3',
  })
  @IsOptional()
  @Matches(/^[\x21-\x7e]{1,255}$/, { message: 'idempotency_key must be 1 to 255 printable ASCII characters' })
  idempotency_key?: string;
}

export class LicenseInfo {
  @ApiProperty() is_active: boolean;
  @ApiProperty() is_expired: boolean;
  @ApiProperty({ example: 'pro' }) tier: string;
}

export class MetricUsage {
  @ApiProperty({ type: 'integer' }) used: number;
  @ApiProperty({ type: 'integer', description: 'The limit in force' }) limit: number;
  @ApiProperty({ description: 'used >= limit' }) at_capacity: boolean;
}

export class UsageSummary {
  @ApiProperty({ type: () => MetricUsage }) projects: MetricUsage;
  @ApiProperty({ type: () => MetricUsage, description: 'Within the current billing period' }) ai_tokens: MetricUsage;
  @ApiProperty({ type: () => MetricUsage, description: "The organisation's memberships" }) users: MetricUsage;
}

export class LicenseStatusResponse {
  @ApiProperty({ type: () => LicenseInfo }) license: LicenseInfo;
  @ApiProperty({ type: () => UsageSummary }) usage: UsageSummary;
}

export class UsageResponse extends MetricUsage {
  @ApiProperty({ enum: METERED_METRICS }) metric: MeteredMetric;
}

export class CheckResponse {
  @ApiProperty({ description: 'used + amount <= limit' }) allowed: boolean;
  @ApiProperty({ type: 'integer' }) used: number;
  @ApiProperty({ type: 'integer' }) limit: number;
  @ApiProperty({ type: 'integer', description: 'max(limit - used, 0)' }) remaining: number;
}
