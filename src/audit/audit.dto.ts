import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUUID } from 'class-validator';
import { QueryInt } from '../common/query-int.decorator';

export class AuditQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this organisation's entries" })
  @IsOptional()
  @IsUUID()
  organisation_id?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @QueryInt({ min: 1, max: 100 })
  limit?: number;

  @ApiPropertyOptional({ example: '1042', description: 'id of the last entry of the previous page' })
  @IsOptional()
  @IsString()
  starting_after?: string;
}

const SNAPSHOT = { type: 'object', additionalProperties: true, nullable: true } as const;

export class AuditRecord {
  @ApiProperty({ example: '1042', description: 'Increasing; the cursor of starting_after' }) id: string;
  @ApiProperty({ format: 'date-time' }) at: string;
  @ApiProperty({ example: 'service_key:webapp', description: '`service_key:<name>`, `user:<id>`, `cli:<os user>` or `operator:<email>`' }) actor: string;
  @ApiProperty({ example: 'member.added', description: 'A dotted name' }) action: string;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) organisation_id: string | null;
  @ApiProperty({ ...SNAPSHOT, description: 'The record before the change (null: it did not exist)' }) before: Record<string, unknown> | null;
  @ApiProperty({ ...SNAPSHOT, description: 'The record after the change (null: it no longer exists)' }) after: Record<string, unknown> | null;
  @ApiProperty({ nullable: true, type: String, description: 'X-Request-Id of the change (null from the CLI)' }) request_id: string | null;
}

export class AuditPage {
  @ApiProperty({ type: [AuditRecord], description: 'Newest first' }) data: AuditRecord[];
  @ApiProperty({ description: 'More entries follow: pass the last id as starting_after' }) has_more: boolean;
}
