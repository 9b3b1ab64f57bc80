import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { QueryCaller, QueryVerifiedCaller, ServiceKey, Session, SessionOrServiceKey } from '../common/route-auth.decorators';
import {
  CheckQuery,
  CheckResponse,
  LicenseStatusResponse,
  OrganisationQuery,
  UsageBatchBody,
  UsageBatchResponse,
  UsageReportBody,
  UsageResponse,
} from './licensing.dto';
import { LicensingService } from './licensing.service';
import { UsageBatchService } from './usage-batch.service';
import { UsageService } from './usage.service';

@ApiTags('licensing')
@Controller('api/licensing')
export class LicensingController {
  constructor(
    private readonly licensing: LicensingService,
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

  @Get('check')
  @SessionOrServiceKey()
  @ApiOperation({ summary: 'Would `amount` more of a metric fit under the limit in force? (member session or service key)' })
  @ApiOkResponse({ type: CheckResponse })
  @ApiErrors(400, 401, 403, 404)
  check(@CurrentUser() user: AuthUser | undefined, @Query() query: CheckQuery): Promise<CheckResponse> {
    return this.licensing.check(query.organisation_id, user?.id ?? null, query.metric, query.amount);
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
