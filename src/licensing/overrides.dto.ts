import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsISO8601, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { OverrideRecord } from './entitlements.dto';

export const MAX_NOTE_LENGTH = 500;

export class OrganisationParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}

export class OverrideParams extends OrganisationParams {
  @ApiProperty({ example: 'sso', description: 'A feature or a metric of the tier table' })
  @IsString()
  name: string;
}

export class PutOverrideBody {
  @ApiProperty({
    oneOf: [{ type: 'boolean' }, { type: 'integer', minimum: 0 }],
    example: true,
    description: "A feature: true or false. A metric: its limit, an integer ≥ 0. Anything else: 400 invalid_override_value",
  })
  @IsDefined()
  value: boolean | number;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2027-03-31T23:59:59Z',
    description: 'A future ISO 8601 time from which it no longer applies; absent or null: until deleted',
  })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true }, { message: 'expires_at must be an ISO 8601 date and time' })
  expires_at?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: MAX_NOTE_LENGTH, example: 'Pilot until the contract is signed' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NOTE_LENGTH)
  note?: string | null;
}

export class OverrideList {
  @ApiProperty({ type: [OverrideRecord], description: 'Every override, expired ones too (see expires_at), by name' }) data: OverrideRecord[];
}
