import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { AppException } from '../common/app-exception';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { QueryCaller, QueryVerifiedCaller, ServiceKey, Session, SessionOrServiceKey } from '../common/route-auth.decorators';
import {
  CheckQuery,
  CheckResponse,
  FeatureCheckResponse,
  LicenseStatusResponse,
  OrganisationQuery,
  UsageBatchBody,
  UsageBatchResponse,
  UsageReportBody,
  UsageResponse,
} from './licensing.dto';
import { EntitlementsResponse, LimitEntitlement } from './entitlements.dto';
import { EntitlementsService } from './entitlements.service';
import { LicensingService } from './licensing.service';
import { UsageBatchService } from './usage-batch.service';
import { UsageService } from './usage.service';

@ApiTags('licensing')
@Controller('api/licensing')
export class LicensingController {
  constructor(
    private readonly licensing: LicensingService,
    private readonly entitlementsRead: EntitlementsService,
    private readonly usage: UsageService,
    private readonly batch: UsageBatchService,
  ) {}

  @Get('status')
  // A session is verified by the status statement itself: one database round trip per request.
  @Session({ verifiedBy: 'query' })
  @ApiOperation({ summary: "An organisation's license tier and its usage against the limits in force (members only)" })
  @ApiOkResponse({ type: LicenseStatusResponse })
  @ApiErrors(400, 401, 403)
  status(@QueryVerifiedCaller() caller: QueryCaller, @Query() query: OrganisationQuery): Promise<LicenseStatusResponse> {
    return this.licensing.statusForCaller(query.organisation_id, caller);
  }

  @Get('entitlements')
  // A session is verified by the entitlements statement itself: one database round trip per request.
  @SessionOrServiceKey({ verifiedBy: 'query' })
  @ApiOperation({
    summary: "An organisation's features and limits in force, with usage, origins and live overrides (member, trusted JWT or service key)",
  })
  @ApiExtraModels(LimitEntitlement)
  @ApiOkResponse({ type: EntitlementsResponse })
  @ApiErrors(400, 401, 403, 404)
  entitlements(@QueryVerifiedCaller() caller: QueryCaller, @Query() query: OrganisationQuery): Promise<EntitlementsResponse> {
    return this.entitlementsRead.readForCaller(query.organisation_id, caller);
  }

  @Get('check')
  @SessionOrServiceKey()
  @ApiOperation({
    summary: 'Would `amount` more of a metric fit under the limit in force (metric)? Is a feature in force (feature)? (member session or service key)',
  })
  @ApiExtraModels(CheckResponse, FeatureCheckResponse)
  @ApiOkResponse({ schema: { oneOf: [{ $ref: getSchemaPath(CheckResponse) }, { $ref: getSchemaPath(FeatureCheckResponse) }] } })
  @ApiErrors(400, 401, 403, 404)
  check(@CurrentUser() user: AuthUser | undefined, @Query() query: CheckQuery): Promise<CheckResponse | FeatureCheckResponse> {
    const userId = user?.id ?? null;
    if (query.feature === undefined) return this.licensing.check(query.organisation_id, userId, query.metric!, query.amount);
    if (query.metric !== undefined) throw new AppException('validation_failed', 'Give metric or feature, not both.');
    return this.entitlementsRead.checkFeature(query.organisation_id, userId, query.feature);
  }

  @Post('usage')
  @HttpCode(200)
  @ServiceKey()
  @ApiOperation({
    summary: 'Report usage from a trusted back-end; an increase past the limit in force is refused whole (402)',
  })
  @ApiOkResponse({ type: UsageResponse })
  @ApiErrors(400, 401, 402, 403, 404, 409)
  report(@Body() body: UsageReportBody): Promise<UsageResponse> {
    return this.usage.record({
      organisationId: body.organisation_id,
      metric: body.metric,
      amount: body.amount,
      idempotencyKey: body.idempotency_key,
    });
  }

  @Post('usage/batch')
  @HttpCode(200)
  @ServiceKey()
  @ApiOperation({
    summary: 'Report 1 to 1000 usage events at once; each gets the answer a single report would (a malformed batch: 400, nothing applied)',
  })
  @ApiOkResponse({ type: UsageBatchResponse })
  @ApiErrors(400, 401, 403)
  async reportBatch(@Body() body: UsageBatchBody): Promise<UsageBatchResponse> {
    return { results: await this.batch.record(body.events) };
  }
}
