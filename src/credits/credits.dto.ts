import { ApiProperty } from '@nestjs/swagger';
import { GRANT_CATEGORIES, GRANT_SOURCES, type GrantCategory, type GrantSource } from './credit-grant.entity';

/** A credit grant as the API shows it (spec §16.1). */
export class CreditGrantRecord {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ type: 'integer', minimum: 1, example: 500000 }) amount: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 320000,
    description: 'What is left to draw on; 0 once voided or past expires_at (the expiry needs no job: its ledger entry follows within a minute)',
  })
  remaining: number;
  @ApiProperty({ enum: GRANT_CATEGORIES, description: 'promotional grants are drawn on before paid ones of the same priority and expiry' })
  category: GrantCategory;
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100, example: 50, description: 'Lower is drawn on first' }) priority: number;
  @ApiProperty({ enum: GRANT_SOURCES }) source: GrantSource;
  @ApiProperty({ type: 'string', format: 'date-time', description: 'From when it counts' }) effective_at: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'From when it no longer counts; null: never' }) expires_at: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) voided_at: string | null;
  @ApiProperty({ type: 'string', nullable: true, maxLength: 500 }) note: string | null;
  @ApiProperty({ type: 'string', format: 'date-time' }) created_at: string;
}

/** An automatic top-up setting (spec §16.4). */
export class AutoRechargeRecord {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ example: 'tokens_1m', description: 'The credit pack bought each time' }) pack: string;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'A report leaving `available` below this buys a pack' }) threshold: number;
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100, description: 'The most packs bought so in a calendar month (UTC)' }) monthly_limit: number;
  @ApiProperty({ description: 'false after a declined payment, until the setting is saved again' }) enabled: boolean;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Packs bought (or being bought) so this calendar month (UTC)' }) recharges_this_month: number;
  @ApiProperty({ type: 'string', nullable: true, description: "Why the last one failed (the provider's message)" }) last_error: string | null;
}
