import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsUUID } from 'class-validator';

export class PortalQuery {
  @ApiPropertyOptional({ format: 'uuid', description: 'Needed only when the caller belongs to several organisations' })
  @IsOptional()
  @IsUUID()
  organisation_id?: string;
}

/** Seed 2.2. */
export class PortalSessionResponse {
  @ApiProperty({ example: 'https://billing.stripe.com/p/session/test_YWNjdF8x', description: 'Redirect the user here' })
  url: string;
}
