import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { AuditPage, AuditQuery } from './audit.dto';
import { AuditService } from './audit.service';

@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: 'The audit log, newest first (keyset pagination by id)' })
  @ApiOkResponse({ type: AuditPage })
  @ApiErrors(400, 401, 403)
  list(@Query() query: AuditQuery): Promise<AuditPage> {
    return this.audit.page({ organisationId: query.organisation_id, limit: query.limit ?? 20, startingAfter: query.starting_after });
  }
}
