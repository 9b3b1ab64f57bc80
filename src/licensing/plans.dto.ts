import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min } from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';

export class PlanVersionView {
  @ApiProperty({ type: 'integer', minimum: 1, example: 1 }) version: number;
  @ApiProperty({ format: 'date-time', description: 'When a start of the service recorded it' }) created_at: string;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Live subscriptions on it (active, trialing or within grace)' }) subscriptions: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'What the tier said: per_seat, trial_days, limits, overage, rollover, features (the true ones) and prices (the price ids that sell it)',
  })
  definition: Record<string, unknown>;
}

export class TierVersions {
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty({ type: [PlanVersionView], description: 'Oldest first' }) versions: PlanVersionView[];
}

export class PlanVersionList {
  @ApiProperty({ type: [TierVersions], description: "Every tier with a version, in the tier table's order (tiers it no longer lists last)" })
  data: TierVersions[];
}

export class TierParams {
  @ApiProperty({ example: 'pro' })
  @IsString()
  @MaxLength(64)
  @Matches(/^[a-z0-9_]+$/, { message: 'tier must be a tier name (lower-case letters, digits, _)' })
  tier: string;
}

export class MigrationPreviewBody {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, example: 1, description: 'Only the subscriptions on this version (default: every version older than to_version)' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  from_version?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, example: 2, description: 'The version they would move to (default: the newest)' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  to_version?: number;
}

export class MigrationPreviewQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 100, description: 'Organisations per page' })
  @IsOptional()
  @QueryInt({ min: 1, max: 100 })
  limit?: number;

  @ApiPropertyOptional({ format: 'uuid', description: 'The last organisation_id of the previous page' })
  @IsOptional()
  @IsUUID()
  starting_after?: string;
}

const COUNTS = { type: 'object', additionalProperties: { type: 'integer' } } as const;

export class MigrationPreviewSummary {
  @ApiProperty({ ...COUNTS, example: { sso: 12 }, description: 'Feature → subscriptions that would gain it' }) features_gained: Record<string, number>;
  @ApiProperty({ ...COUNTS, example: { api_access: 40 }, description: 'Feature → subscriptions that would lose it (an override keeping it is not a loss)' })
  features_lost: Record<string, number>;
  @ApiProperty({ ...COUNTS, example: { projects: 40 }, description: 'Metric → subscriptions whose limit in force would be lower' }) limits_lowered: Record<string, number>;
  @ApiProperty({ ...COUNTS, example: { projects: 3 }, description: "Metric → subscriptions whose organisation's use now is above the new limit" })
  over_new_limit: Record<string, number>;
  @ApiProperty({ type: 'integer', description: "Subscriptions whose version's price ids differ from the target's" }) price_changed: number;
}

export class MigrationPreviewLimit {
  @ApiProperty({ example: 'projects' }) metric: string;
  @ApiProperty({ type: 'integer', description: 'The limit in force now (overrides and seats counted)' }) from: number;
  @ApiProperty({ type: 'integer', description: 'The limit in force after the move' }) to: number;
  @ApiProperty({ type: 'integer', description: 'The use now (the current period for a metric counted per period)' }) used: number;
  @ApiProperty({ description: 'used is above the new limit' }) over: boolean;
}

export class MigrationPreviewPrice {
  @ApiProperty({ type: [String], description: "The price ids of the subscription's version" }) from: string[];
  @ApiProperty({ type: [String], description: "The target version's price ids" }) to: string[];
}

export class MigrationPreviewRow {
  @ApiProperty({ format: 'uuid' }) organisation_id: string;
  @ApiProperty({ type: 'string', nullable: true, description: "The web app's own id of the organisation" }) external_id: string | null;
  @ApiProperty({ example: 'sub_1MowQVLkdIwHu7ixeRlqHVzs' }) subscription_id: string;
  @ApiProperty({ type: 'integer' }) from_version: number;
  @ApiProperty({ type: [String] }) features_gained: string[];
  @ApiProperty({ type: [String], description: 'An override keeping a feature: not lost' }) features_lost: string[];
  @ApiProperty({ type: [MigrationPreviewLimit], description: 'Every metric whose limit in force would change' }) limits: MigrationPreviewLimit[];
  @ApiProperty({ type: () => MigrationPreviewPrice, nullable: true, description: 'null: the same price ids' }) price: MigrationPreviewPrice | null;
}

export class MigrationPreview {
  @ApiProperty({ type: 'integer', description: 'Live subscriptions that would move' }) subscriptions: number;
  @ApiProperty({ type: () => MigrationPreviewSummary }) summary: MigrationPreviewSummary;
  @ApiProperty({ type: [MigrationPreviewRow], description: 'By organisation_id; a page of organisations (limit, starting_after)' }) data: MigrationPreviewRow[];
  @ApiProperty({ description: 'More organisations follow: pass the last organisation_id as starting_after' }) has_more: boolean;
}

export class StartMigrationBody extends MigrationPreviewBody {
  @ApiProperty({ enum: ['now', 'period_end'], example: 'period_end', description: "When each subscription moves: now, or at the end of its current period" })
  @IsIn(['now', 'period_end'])
  at: 'now' | 'period_end';
}

export class MigrationParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}

export class MigrationError {
  @ApiProperty({ example: 'sub_1MowQVLkdIwHu7ixeRlqHVzs' }) subscription_id: string;
  @ApiProperty({ description: 'Why it was not moved (the provider refused it, or it is no longer of the tier)' }) message: string;
}

export class MigrationRead {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty({ type: 'integer', nullable: true, description: 'null: every version older than to_version' }) from_version: number | null;
  @ApiProperty({ type: 'integer' }) to_version: number;
  @ApiProperty({ enum: ['now', 'period_end'] }) at: 'now' | 'period_end';
  @ApiProperty({ enum: ['running', 'done', 'failed'], description: 'failed: it ended with some subscriptions not moved (see failed and errors)' })
  status: 'running' | 'done' | 'failed';
  @ApiProperty({ type: 'integer', description: 'Subscriptions it moves (live on an older version, or on from_version, when it started)' }) total: number;
  @ApiProperty({ type: 'integer', description: 'Moved (at period_end: their version set to change at their period end)' }) done: number;
  @ApiProperty({ type: 'integer', description: 'Not moved, left on their version' }) failed: number;
  @ApiProperty({ type: [MigrationError], description: 'The first 20 not moved' }) errors: MigrationError[];
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) finished_at: string | null;
}
