import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { GrantBody, GrantParams, OrganisationParams } from './credits-routes.dto';
import { CreditGrantRecord } from './credits.dto';
import { CreditsAdminService } from './credits-admin.service';

/**
 * Credit grants given by an operator (spec §16.2): part of the provisioning API (`X-Service-Key`), every change
 * audited as `service_key:<name>` in its transaction.
 */
@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin/organisations/:id/credits/grants')
export class CreditGrantsController {
  constructor(private readonly admin: CreditsAdminService) {}

  @Post()
  @ApiOperation({
    summary: 'Give an organisation a credit grant (201); the same idempotency_key again answers it (200)',
    description:
      'For a metric counted per billing period (else 400 invalid_credit_metric), on any tier: it counts where the tier in force ' +
      'gives the metric the credits policy. The same idempotency_key with another body → 409 idempotency_conflict.',
  })
  @ApiCreatedResponse({ type: CreditGrantRecord })
  @ApiOkResponse({ type: CreditGrantRecord, description: 'The grant this idempotency_key made before' })
  @ApiErrors(400, 401, 403, 404, 409)
  async grant(
    @Actor() by: AuditActor,
    @Param() params: OrganisationParams,
    @Body() body: GrantBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CreditGrantRecord> {
    const { grant, created } = await this.admin.grant(by, params.id, body);
    res.status(created ? 201 : 200);
    return grant;
  }

  @Post(':grant_id/void')
  @HttpCode(200)
  @ApiOperation({
    summary: "Void a grant: what is left is written off (a void ledger entry), remaining 0; a voided grant again: 200, unchanged",
  })
  @ApiOkResponse({ type: CreditGrantRecord })
  @ApiErrors(400, 401, 403, 404)
  void(@Actor() by: AuditActor, @Param() params: GrantParams): Promise<CreditGrantRecord> {
    return this.admin.void(by, params.id, params.grant_id);
  }
}
