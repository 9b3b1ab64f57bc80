import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { MigrationPreview, PlanVersionList, MigrationPreviewBody, MigrationPreviewQuery, TierParams } from './plans.dto';
import { PlansService } from './plans.service';

/** The plan versions and the migration preview (spec §17): part of the provisioning API (`X-Service-Key`). */
@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin/plans')
export class PlansController {
  constructor(private readonly plans: PlansService) {}

  @Get()
  @ApiOperation({ summary: "Every tier's plan versions, with the live subscriptions on each" })
  @ApiOkResponse({ type: PlanVersionList })
  @ApiErrors(401, 403)
  list(): Promise<PlanVersionList> {
    return this.plans.list();
  }

  @Post(':tier/migrations/preview')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'What moving the tier’s subscriptions to a newer version would change: who gains and loses which feature, whose limit drops (and below their use), whose price changes; changes nothing',
  })
  @ApiOkResponse({ type: MigrationPreview })
  @ApiErrors(400, 401, 403)
  preview(@Param() params: TierParams, @Body() body: MigrationPreviewBody, @Query() query: MigrationPreviewQuery): Promise<MigrationPreview> {
    return this.plans.preview(params.tier, body, { limit: query.limit ?? 100, startingAfter: query.starting_after ?? null });
  }
}
