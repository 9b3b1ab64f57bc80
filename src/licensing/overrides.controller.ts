import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { OverrideRecord } from './entitlements.dto';
import { OrganisationParams, OverrideList, OverrideParams, PutOverrideBody } from './overrides.dto';
import { OverridesService } from './overrides.service';

/**
 * Per-organisation overrides of features and limits (spec §12), for custom deals and support grants:
 * part of the provisioning API (`X-Service-Key`), every change audited as `service_key:<name>`.
 */
@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin/organisations/:id/overrides')
export class OverridesController {
  constructor(private readonly overrides: OverridesService) {}

  @Put(':name')
  @ApiOperation({
    summary: "Set an override: a feature's value or a metric's limit, replacing the tier's while it lasts (the same again: 200, unchanged)",
  })
  @ApiOkResponse({ type: OverrideRecord })
  @ApiErrors(400, 401, 403, 404)
  set(@Actor() by: AuditActor, @Param() params: OverrideParams, @Body() body: PutOverrideBody): Promise<OverrideRecord> {
    return this.overrides.set(by, params.id, params.name, body);
  }

  @Get()
  @ApiOperation({ summary: "The organisation's overrides, expired ones too" })
  @ApiOkResponse({ type: OverrideList })
  @ApiErrors(400, 401, 403, 404)
  async list(@Param() params: OrganisationParams): Promise<OverrideList> {
    return { data: await this.overrides.list(params.id) };
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an override: the tier decides again' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiErrors(400, 401, 403, 404)
  async delete(@Actor() by: AuditActor, @Param() params: OverrideParams): Promise<void> {
    await this.overrides.delete(by, params.id, params.name);
  }
}
