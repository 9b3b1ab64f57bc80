import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsISO8601, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min, validateSync } from 'class-validator';
import { AppException } from '../common/app-exception';
import { QueryInt } from '../common/query-int.decorator';
import { ENTITLEMENT_NAME } from '../config/tiers';
import { GRANT_CATEGORIES, type GrantCategory } from './credit-grant.entity';
import { LEDGER_KINDS, type LedgerKind } from './credit-ledger-entry.entity';
import { AutoRechargeRecord, CreditGrantRecord } from './credits.dto';
import { MAX_GRANT_AMOUNT, MAX_NOTE_LENGTH } from './credits.service';

const METRIC_RULE = { message: 'metric must be a metric name (lower-case letters, digits or _)' };

export class OrganisationParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}

export class GrantParams extends OrganisationParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  grant_id: string;
}

/** POST /api/admin/organisations/{id}/credits/grants (spec §16.2). */
export class GrantBody {
  @ApiProperty({ example: 'ai_tokens', description: 'A metric counted per billing period (else 400 invalid_credit_metric)' })
  @IsString()
  @Matches(ENTITLEMENT_NAME, METRIC_RULE)
  metric: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_GRANT_AMOUNT, example: 500000 })
  @IsInt()
  @Min(1)
  @Max(MAX_GRANT_AMOUNT)
  amount: number;

  @ApiPropertyOptional({ enum: GRANT_CATEGORIES, example: 'promotional', description: 'Default promotional; promotional grants are drawn on before paid ones of the same priority and expiry' })
  @IsOptional()
  @IsIn(GRANT_CATEGORIES)
  category?: GrantCategory;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, example: 50, description: 'Lower is drawn on first; default 50' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  priority?: number;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', example: '2026-12-01T00:00:00Z', description: 'From when it counts; default now' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true }, { message: 'effective_at must be an ISO 8601 date and time' })
  effective_at?: string;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', example: '2027-03-01T00:00:00Z', description: 'After effective_at and now; absent: never' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true }, { message: 'expires_at must be an ISO 8601 date and time' })
  expires_at?: string;

  @ApiPropertyOptional({ type: 'string', maxLength: MAX_NOTE_LENGTH, example: 'Sorry for the outage on 3 March' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NOTE_LENGTH)
  note?: string;

  @ApiProperty({ example: 'deal-4711', description: 'The same key again: the same grant (200); with another body: 409 idempotency_conflict' })
  @IsString()
  @Matches(/^[\x21-\x7e]{1,255}$/, { message: 'idempotency_key must be 1 to 255 printable ASCII characters' })
  idempotency_key: string;
}

/**
 * A grant's body from a caller the validation pipe does not stand before (the console's form, the CLI), whose
 * fields are text: `amount` and `priority` in plain digits are read as numbers, then the rules of GrantBody apply,
 * else 400 `validation_failed` naming each broken one.
 */
export function checkedGrantBody(fields: Record<string, unknown>): GrantBody {
  const whole = (v: unknown) => (typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : v);
  const body = Object.assign(new GrantBody(), fields, {
    amount: whole(fields.amount),
    ...(fields.priority === undefined ? {} : { priority: whole(fields.priority) }),
  });
  const errors = validateSync(body, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length) throw new AppException('validation_failed', errors.flatMap((e) => Object.values(e.constraints ?? {})).join('; '));
  return body;
}

export class CreditsQuery {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  organisation_id: string;
}

export class LedgerQuery extends CreditsQuery {
  @ApiPropertyOptional({ example: 'ai_tokens', description: "Only this metric's entries" })
  @IsOptional()
  @IsString()
  @Matches(ENTITLEMENT_NAME, METRIC_RULE)
  metric?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @QueryInt({ min: 1, max: 100 })
  limit?: number;

  @ApiPropertyOptional({ example: '1042', description: 'The id of the last entry of the previous page' })
  @IsOptional()
  @IsString()
  @Matches(/^[1-9]\d{0,17}$/, { message: 'starting_after must be the id of a ledger entry' })
  starting_after?: string;
}

export class IncludedAmount {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The included amount of the period (the limit in force)' }) limit: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'What of it is used' }) used: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) remaining: number;
}

export class CreditMetric {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ enum: ['credits'] }) policy: 'credits';
  @ApiProperty({ type: () => IncludedAmount }) included: IncludedAmount;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The remaining of the grants that count' }) balance: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'What live reservations hold' }) reserved: number;
  @ApiProperty({ type: 'integer', description: 'included.remaining + balance − reserved: what the next reports may take' }) available: number;
  @ApiProperty({ type: () => [CreditGrantRecord], description: 'The grants that count (with something left), in the order they are drawn on' })
  grants: CreditGrantRecord[];
  @ApiProperty({ type: () => AutoRechargeRecord, nullable: true }) auto_recharge: AutoRechargeRecord | null;
}

export class CreditsResponse {
  @ApiProperty({ type: () => [CreditMetric], description: 'Every metric whose policy is credits in the tier in force, in table order' })
  data: CreditMetric[];
}

export class LedgerEntryRecord {
  @ApiProperty({ example: '1042', description: 'Increasing; the cursor of starting_after' }) id: string;
  @ApiProperty({ format: 'date-time' }) at: string;
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ enum: LEDGER_KINDS }) kind: LedgerKind;
  @ApiProperty({ type: 'integer', description: 'Signed: a grant (and a release) +, a consumption, expiry or void −' }) amount: number;
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, description: 'The grant it moved (null: a release)' }) grant_id: string | null;
  @ApiProperty({ type: 'integer', minimum: 0, description: "The metric's balance after it" }) balance_after: number;
  @ApiProperty({
    type: 'string',
    nullable: true,
    description: "The usage report's idempotency key, the reservation, the checkout session, the invoice, the period, or the operator",
  })
  reference: string | null;
}

export class LedgerPage {
  @ApiProperty({ type: () => [LedgerEntryRecord], description: 'Newest first' }) data: LedgerEntryRecord[];
  @ApiProperty({ description: 'More entries follow: pass the last id as starting_after' }) has_more: boolean;
}

/** POST /api/licensing/usage/reservations (spec §16.5). */
export class ReservationBody {
  @ApiProperty({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11' })
  @IsUUID()
  organisation_id: string;

  @ApiProperty({ example: 'ai_tokens', description: 'A metric back-ends report' })
  @IsString()
  @Matches(ENTITLEMENT_NAME, METRIC_RULE)
  metric: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_GRANT_AMOUNT, example: 8000, description: 'The most the work may spend' })
  @IsInt()
  @Min(1)
  @Max(MAX_GRANT_AMOUNT)
  amount: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 3600, example: 300, description: 'How long it holds, in seconds; default 300' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  ttl_s?: number;

  @ApiPropertyOptional({ maxLength: 255, example: 'request-7d1f0c2e', description: 'The same key again: the same reservation (within 24 hours)' })
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{1,255}$/, { message: 'idempotency_key must be 1 to 255 printable ASCII characters' })
  idempotency_key?: string;
}

export class ReservationParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}

const RESERVATION_ORGANISATION =
  "The reservation's organisation, as the caller knows it: a reservation of another organisation is then unknown (404), as if it did not exist";

export class CommitBody {
  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_GRANT_AMOUNT, example: 5210, description: 'What the work spent: 0 to the reserved amount (more: 400)' })
  @IsInt()
  @Min(0)
  @Max(MAX_GRANT_AMOUNT)
  amount: number;

  @ApiPropertyOptional({ format: 'uuid', example: '2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', description: RESERVATION_ORGANISATION })
  @IsOptional()
  @IsUUID()
  organisation_id?: string;
}

export class ReleaseQuery {
  @ApiPropertyOptional({ format: 'uuid', description: RESERVATION_ORGANISATION })
  @IsOptional()
  @IsUUID()
  organisation_id?: string;
}

export class ReservationRecord {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) organisation_id: string;
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ type: 'integer', minimum: 1 }) amount: number;
  @ApiProperty({ format: 'date-time', description: 'When the hold lapses by itself' }) expires_at: string;
}
