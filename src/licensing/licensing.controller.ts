import { Body, Controller, Get, HttpCode, Post, Query, UseGuards } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCookieAuth,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrors, SECURITY } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Public } from '../common/public.decorator';
import { SessionTokenGuard, SessionTokenHash } from '../common/session-token.guard';
import {
  CheckQuery,
  CheckResponse,
  LicenseStatusResponse,
  OrganisationQuery,
  UsageReportBody,
  UsageResponse,
} from './licensing.dto';
import { LicensingService } from './licensing.service';
import { ServiceKeyGuard, ServiceKeyOrSessionGuard } from './service-key.guard';
import { UsageService } from './usage.service';

@ApiTags('licensing')
@Controller('api/licensing')
export class LicensingController {
  constructor(
    private readonly licensing: LicensingService,
    private readonly usage: UsageService,
  ) {}

  @Get('status')
  // The session is verified by the status statement itself: one database round trip per request.
  @Public()
  @UseGuards(SessionTokenGuard)
  @ApiOperation({ summary: "An organisation's license tier and its usage against the limits in force (members only)" })
  @ApiBearerAuth(SECURITY.session)
  @ApiCookieAuth(SECURITY.sessionCookie)
  @ApiOkResponse({ type: LicenseStatusResponse })
  @ApiErrors(400, 401, 403)
  status(@SessionTokenHash() tokenHash: Buffer, @Query() query: OrganisationQuery): Promise<LicenseStatusResponse> {
    return this.licensing.statusForSession(query.organisation_id, tokenHash);
  }

  @Get('check')
  @Public()
  @UseGuards(ServiceKeyOrSessionGuard)
  @ApiOperation({ summary: 'Would `amount` more of a metric fit under the limit in force? (member session or service key)' })
  @ApiBearerAuth(SECURITY.session)
  @ApiCookieAuth(SECURITY.sessionCookie)
  @ApiSecurity(SECURITY.serviceKey)
  @ApiOkResponse({ type: CheckResponse })
  @ApiErrors(400, 401, 403, 404)
  check(@CurrentUser() user: AuthUser | undefined, @Query() query: CheckQuery): Promise<CheckResponse> {
    return this.licensing.check(query.organisation_id, user?.id ?? null, query.metric, query.amount);
  }

  @Post('usage')
  @HttpCode(200)
  @Public()
  @UseGuards(ServiceKeyGuard)
  @ApiOperation({
    summary: 'Report usage from a trusted back-end; an increase past the limit in force is refused whole (402)',
  })
  @ApiSecurity(SECURITY.serviceKey)
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
}
