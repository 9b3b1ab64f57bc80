import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { PlanMigrationsService } from './plan-migrations.service';
import {
  MigrationParams,
  MigrationPreview,
  MigrationPreviewBody,
  MigrationPreviewQuery,
  MigrationRead,
  PlanVersionList,
  StartMigrationBody,
  TierParams,
} from './plans.dto';
import { PlansService } from './plans.service';

/** The plan versions, the migration preview and migrations (spec §17): part of the provisioning API (`X-Service-Key`). */
@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin/plans')
export class PlansController {
  constructor(
    private readonly plans: PlansService,
    private readonly migrations: PlanMigrationsService,
  ) {}

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

  @Post(':tier/migrations')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Moves the tier’s live subscriptions (on from_version, or every older version) to to_version (default: the newest), now or at each one’s period end, on the job queue; one migration per tier at a time',
  })
  @ApiAcceptedResponse({ type: MigrationRead })
  @ApiErrors(400, 401, 403, 409)
  start(@Actor() by: AuditActor, @Param() params: TierParams, @Body() body: StartMigrationBody): Promise<MigrationRead> {
    return this.migrations.start(params.tier, body, by);
  }

  @Get('migrations/:id')
  @ApiOperation({ summary: 'A migration: its status, how many subscriptions it moved and could not, and the first 20 it could not' })
  @ApiOkResponse({ type: MigrationRead })
  @ApiErrors(400, 401, 403, 404)
  migration(@Param() params: MigrationParams): Promise<MigrationRead> {
    return this.migrations.get(params.id);
  }
}
