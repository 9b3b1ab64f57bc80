import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  Min,
  NotEquals,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';
import { METERED_METRICS, ENTITLEMENT_NAME, METRICS } from '../config/tiers';

// Larger reports are bugs on the reporting side, not usage.
export const MAX_AMOUNT = 1_000_000_000_000;

export class OrganisationQuery {
  // A repeated parameter arrives as an array and fails here, as it should.
  @ApiProperty({ format: 'uuid', description: 'Organisation to report on' })
  @IsUUID()
  organisation_id: string;
}

export class CheckQuery extends OrganisationQuery {
  @ApiPropertyOptional({
    enum: METRICS,
    description: 'The metric form: would `amount` more fit? A metric of the tier table. Give metric or feature, not both.',
  })
  @ValidateIf((q: CheckQuery) => q.feature === undefined)
  @IsString()
  @Matches(ENTITLEMENT_NAME, { message: 'metric must be a metric name (lower-case letters, digits or _)' })
  metric?: string;

  @ApiPropertyOptional({ example: 'sso', description: 'The feature form: is this feature of the tier table in force?' })
  @IsOptional()
  @IsString()
  @Matches(ENTITLEMENT_NAME, { message: 'feature must be a feature name (lower-case letters, digits or _)' })
  feature?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_AMOUNT, default: 1, description: 'The metric form only' })
  @IsOptional()
  @QueryInt({ min: 1, max: MAX_AMOUNT })
  amount: number = 1;
}

export class UsageReportBody {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ enum: METERED_METRICS, example: 'ai_tokens', description: 'projects, ai_tokens, or a further metric of the tier table' })
  @IsString()
  @Matches(ENTITLEMENT_NAME, { message: 'metric must be a metric name (lower-case letters, digits or _)' })
  metric: string;

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

const OVERAGE = 'max(used - limit, 0): present for a metric whose overage policy is `bill` (accepted past its limit, spec §13), absent for `block`';

const BALANCE = "For a metric whose overage policy is `credits` (spec §16.2), after the report: the balance of the grants that count";
const AVAILABLE = 'For a metric whose overage policy is `credits`, after the report: what is left of the included amount plus the balance, less what reservations hold';

export class UsageResponse extends MetricUsage {
  @ApiProperty({ enum: METERED_METRICS }) metric: string;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: OVERAGE }) overage?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: BALANCE }) balance?: number;
  @ApiPropertyOptional({ type: 'integer', description: AVAILABLE }) available?: number;
  @ApiPropertyOptional({
    enum: [true],
    description: "A reservation's commit after its hold lapsed (spec §16.5): an ordinary report of its amount, accepted because it fitted",
  })
  expired?: true;
}

export class FeatureCheckResponse {
  @ApiProperty({ description: 'The feature is in force for the organisation' }) allowed: boolean;
}

export class CheckResponse {
  @ApiProperty({
    description:
      'A report of `amount` would be accepted now: it fits under the limit less what reservations hold (`block`), under what is left of the included amount plus the balance less the holds (`credits`), or the metric is billed past its limit (`bill`)',
  })
  allowed: boolean;
  @ApiProperty({ type: 'integer' }) used: number;
  @ApiProperty({ type: 'integer' }) limit: number;
  @ApiProperty({ type: 'integer', description: 'max(limit - used, 0)' }) remaining: number;
}

export const MAX_BATCH_EVENTS = 1000;

/**
 * One event of a batch, checked here for its shape only (JSON types, no missing or unknown field): a
 * malformed one refuses the whole batch. Its values are checked per event with UsageReportBody's rules.
 */
export class UsageBatchEvent {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsString()
  organisation_id: string;

  @ApiProperty({ enum: METERED_METRICS, example: 'ai_tokens', description: 'Another string fails this event alone (400).' })
  @IsString()
  metric: string;

  @ApiProperty({ type: 'integer', description: 'A JSON integer; its range and sign are checked per event, as for a single report.', example: 1 })
  @IsInt()
  amount: number;

  @ApiPropertyOptional({ description: 'Shares the key space of single reports of the organisation.', maxLength: 255, example: 'run-7d1f0c2e-step-3' })
  @IsOptional()
  @IsString()
  idempotency_key?: string;
}

export class UsageBatchBody {
  @ApiProperty({
    type: () => [UsageBatchEvent],
    minItems: 1,
    maxItems: MAX_BATCH_EVENTS,
    example: [
      { organisation_id: '2f1c8a3e-5b7d-4e9f-8a1b-3c5d7e9f1a2b', metric: 'ai_tokens', amount: 1200, idempotency_key: 'call-8812' },
      { organisation_id: '2f1c8a3e-5b7d-4e9f-8a1b-3c5d7e9f1a2b', metric: 'projects', amount: 1 },
    ],
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH_EVENTS)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => UsageBatchEvent)
  events: UsageBatchEvent[];
}

/** What a single report of the event would have answered: its status, and the counter when it reached one. */
export class UsageBatchResult {
  @ApiProperty({ type: 'integer', enum: [200, 400, 402, 404, 409], example: 200, description: '200, or the status a single report would get (a failure of the database answers the whole batch 5xx, nothing applied)' })
  status: number;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The counter after the event (200) or that refused it (402); else null' })
  used: number | null;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The limit in force (200, 402); else null' })
  limit: number | null;

  @ApiProperty({ type: 'boolean', nullable: true, description: 'used >= limit (200, 402); else null' })
  at_capacity: boolean | null;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: `${OVERAGE} (200, 402)` })
  overage?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: `${BALANCE} (200, 402)` })
  balance?: number;

  @ApiPropertyOptional({ type: 'integer', description: `${AVAILABLE} (200, 402)` })
  available?: number;

  @ApiPropertyOptional({
    enum: ['validation_failed', 'negative_amount', 'limit_exceeded', 'insufficient_credits', 'organisation_not_found', 'idempotency_key_reused'],
    description: 'The error code a single report would get (absent on 200)',
    example: 'limit_exceeded',
  })
  code?: string;
}

export class UsageBatchResponse {
  @ApiProperty({ type: () => [UsageBatchResult], description: 'One per event, in order' })
  results: UsageBatchResult[];
}
