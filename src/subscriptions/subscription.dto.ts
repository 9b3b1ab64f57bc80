import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import type { LiveSubscription } from './subscriptions.service';

/** Billing intervals a change may name (spec §11.3, 11.4). */
export const INTERVALS = ['month', 'year'] as const;
/** No tier sells more seats than this (a per-seat tier's own `max` is checked by the service). */
export const MAX_SEATS = 1_000_000;
/** Unix seconds; far enough for any period (year 2100). */
const MAX_TIMESTAMP = 4_102_444_800;

export class SubscriptionQuery {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  organisation_id: string;
}

export class OrganisationBody {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;
}

export class PreviewChangeDto extends OrganisationBody {
  @ApiPropertyOptional({ example: 'team', description: 'A paid tier of the table; default: the current one' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  tier?: string;

  @ApiPropertyOptional({ enum: INTERVALS, example: 'month', description: "Default: the current interval (that tier's price with it)" })
  @IsOptional()
  @IsIn(INTERVALS)
  interval?: (typeof INTERVALS)[number];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    example: 5,
    description: "Only for a per-seat tier, at most its max; default: the current seats (or the member count when the current tier is not per seat)",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_SEATS)
  seats?: number;
}

export class ChangeSubscriptionDto extends PreviewChangeDto {
  @ApiPropertyOptional({
    type: 'integer',
    example: 1763990000,
    description: "The `proration_date` a preview answered: an upgrade is then prorated as of that second, so the charge is the one shown",
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_TIMESTAMP)
  proration_date?: number;
}

export class PendingChangeView {
  @ApiProperty({ example: 'pro', nullable: true, type: String }) tier: string | null;
  @ApiProperty({ example: 'month', nullable: true, type: String }) interval: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 5 }) seats: number | null;
  @ApiProperty({ type: 'integer', example: 1766382000, description: 'Unix seconds: the end of the current period' }) effective_at: number;
}

export class SubscriptionView {
  @ApiProperty({ example: 'sub_1MowQVLkdIwHu7ixeRlqHVzs' }) id: string;
  @ApiProperty({ example: 'team', nullable: true, type: String }) tier: string | null;
  @ApiProperty({ example: 'active', description: 'The provider\'s status: active, trialing, past_due, unpaid or incomplete' }) status: string;
  @ApiProperty({ example: 'month', nullable: true, type: String }) interval: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 5, description: "The item's quantity" }) seats: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 1766382000, description: 'Unix seconds' }) current_period_end: number | null;
  @ApiProperty() cancel_at_period_end: boolean;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds; null when not trialing' }) trial_end: number | null;
  @ApiProperty({ type: () => PendingChangeView, nullable: true, description: 'A change that takes effect at the period\'s end' })
  pending_change: PendingChangeView | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 1,
    description: 'The plan version of its tier it is on (spec §17): the newest when it started or last changed tier, until it is migrated',
  })
  plan_version: number | null;
}

/** The answer's form of a stored live subscription. */
export function subscriptionView(live: LiveSubscription): SubscriptionView {
  return {
    id: live.id,
    tier: live.tier,
    status: live.status,
    interval: live.interval,
    seats: live.seats,
    current_period_end: live.periodEnd,
    cancel_at_period_end: live.cancelAtPeriodEnd,
    // The provider keeps a subscription's trial_end after the trial; spec §11.4 answers it only while trialing.
    trial_end: live.status === 'trialing' ? live.trialEnd : null,
    pending_change: live.pendingChange,
    plan_version: live.planVersion,
  };
}

export class SubscriptionResponse {
  @ApiProperty({ type: () => SubscriptionView, nullable: true, description: 'null: no live subscription' })
  subscription: SubscriptionView | null;
}

export class PreviewLine {
  @ApiProperty({ nullable: true, type: String, example: 'Remaining time on 5 × Team after 24 Nov 2026' }) description: string | null;
  @ApiProperty({ type: 'integer', example: 1250, description: 'Integer minor units; negative for a credit' }) amount: number;
  @ApiProperty({ type: 'integer', example: 1763790000 }) period_start: number;
  @ApiProperty({ type: 'integer', example: 1766382000 }) period_end: number;
}

export class PreviewResponse {
  @ApiProperty({ type: 'integer', example: 1250, description: 'Integer minor units, as the provider computed it' }) amount_due: number;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ type: 'integer', example: 1763990000, description: 'Pass it to the change so that the charge is this one' })
  proration_date: number;
  @ApiProperty({ type: 'integer', example: 1763990000, description: 'Unix seconds: now for an upgrade, the period\'s end for a downgrade' })
  effective_at: number;
  @ApiProperty({ type: [PreviewLine] }) lines: PreviewLine[];
}
