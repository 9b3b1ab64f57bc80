import { Body, Controller, Get, Header, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Public, Session } from '../common/route-auth.decorators';
import { CheckoutCreatedResponse, CreateCheckoutDto } from './checkout.dto';
import { CheckoutService } from './checkout.service';
import { HistoryPage, HistoryQuery } from './history.dto';
import { HistoryService } from './history.service';
import { PortalQuery, PortalSessionResponse } from './portal.dto';
import { PortalService } from './portal.service';
import { PlanList, PlansQuery } from './plans.dto';
import { PlansService } from './plans.service';
import { CheckoutSessionResult } from './checkout-session.dto';
import { CheckoutReportService, SESSION_ID } from './checkout-report.service';

@ApiTags('billing')
@Controller('api/billing')
export class BillingController {
  constructor(
    private readonly checkoutReports: CheckoutReportService,
    private readonly checkout: CheckoutService,
    private readonly portal: PortalService,
    private readonly history: HistoryService,
    private readonly plans: PlansService,
  ) {}

  @Get('plans')
  @Public()
  @Header('Cache-Control', 'public, max-age=60')
  @ApiOperation({
    summary: 'The plans a pricing page shows (public)',
    description:
      "Every tier of the tier table in its order, free first: features, limits, trial days, and the prices the provider confirmed (read in the background; a price it does not know or that is inactive is left out). With `currency`, each price's amount in that currency, from the provider's currency options of the price.",
  })
  @ApiOkResponse({ type: PlanList })
  @ApiErrors(400)
  listPlans(@Query() query: PlansQuery): PlanList {
    return this.plans.list(query.currency);
  }

  @Get('session')
  @Session()
  @ApiOperation({ summary: 'Report a completed checkout session (caller must be a member of its organisation)' })
  @ApiQuery({
    name: 'session_id',
    required: true,
    schema: { type: 'string', pattern: SESSION_ID.source },
    description: "The checkout session's id: the success URL's `{CHECKOUT_SESSION_ID}`",
  })
  @ApiOkResponse({ type: CheckoutSessionResult })
  @ApiErrors(400, 401, 403, 404, 429, 500, 503)
  checkoutSession(@CurrentUser() user: AuthUser, @Query('session_id') sessionId: unknown): Promise<CheckoutSessionResult> {
    return this.checkoutReports.report(user, sessionId);
  }

  @Get('portal')
  @Session({ orgRole: ['owner', 'admin'] })
  @ApiOperation({ summary: 'Open a billing-portal session (owner or admin; needs a customer record)' })
  @ApiOkResponse({ type: PortalSessionResponse })
  @ApiErrors(400, 401, 403, 404, 429, 500, 503)
  openPortal(@CurrentUser() user: AuthUser, @Query() query: PortalQuery): Promise<PortalSessionResponse> {
    return this.portal.open(user, query.organisation_id);
  }

  @Post('checkout')
  @HttpCode(201)
  @Session({ orgRole: ['owner', 'admin'] })
  @ApiOperation({
    summary: 'Start a subscription checkout for a paid tier (owner or admin)',
    description: "One payable checkout per organisation: the same plan again answers the organisation's open session (200).",
  })
  @ApiCreatedResponse({ type: CheckoutCreatedResponse, description: 'A new checkout session' })
  @ApiOkResponse({ type: CheckoutCreatedResponse, description: "The organisation's open session for the same plan" })
  @ApiErrors(400, 401, 403, 409, 429, 500, 503)
  async createCheckout(
    @CurrentUser() user: AuthUser,
    @Body() body: CreateCheckoutDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CheckoutCreatedResponse> {
    const { session, created } = await this.checkout.create(user, body);
    if (!created) res.status(200);
    return session;
  }

  @Get('history')
  @Session()
  @ApiOperation({ summary: "An organisation's paid invoices, newest first (any member)" })
  @ApiOkResponse({ type: HistoryPage })
  @ApiErrors(400, 401, 403)
  listHistory(@CurrentUser() user: AuthUser, @Query() query: HistoryQuery): Promise<HistoryPage> {
    return this.history.list(user, query);
  }
}
