import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';

export class HistoryQuery {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  organisation_id: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 10 })
  @IsOptional()
  @QueryInt({ min: 1, max: 100 })
  limit?: number;

  @ApiPropertyOptional({ description: 'invoice_id of the last entry of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  starting_after?: string;
}

export class HistoryEntry {
  @ApiProperty({ example: 'in_1MtHbELkdIwHu7ixl4OzzPMv' }) invoice_id: string;
  @ApiProperty({ example: 'sub_1MowQVLkdIwHu7ixeRlqHVzs', nullable: true, type: String }) subscription_id: string | null;
  @ApiProperty({ example: 2900, description: 'Integer minor units' }) amount_paid: number;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: 1763790000, nullable: true, type: Number }) period_start: number | null;
  @ApiProperty({ example: 1766382000, nullable: true, type: Number }) period_end: number | null;
  @ApiProperty({ example: 1763790005, description: 'Unix seconds' }) paid_at: number;
  @ApiProperty({ nullable: true, type: String }) hosted_invoice_url: string | null;
}

export class HistoryPage {
  @ApiProperty({ type: [HistoryEntry], description: 'Newest first' }) data: HistoryEntry[];
  @ApiProperty({ description: 'More entries follow: pass the last invoice_id as starting_after' }) has_more: boolean;
}
