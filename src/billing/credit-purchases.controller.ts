import { Body, Controller, Delete, HttpCode, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Session } from '../common/route-auth.decorators';
import { AutoRechargeRecord } from '../credits/credits.dto';
import { AutoRechargeQuery, SaveAutoRechargeDto } from './auto-recharge.dto';
import { AutoRechargeService } from './auto-recharge.service';
import { CreateCreditCheckoutDto, CreditCheckoutCreatedResponse } from './credit-checkout.dto';
import { CreditCheckoutService } from './credit-checkout.service';

/** Buying credits through the provider (spec §16.3, §16.4): packs at checkout, and automatic top-ups. */
@ApiTags('billing')
@Controller('api/billing/credits')
export class CreditPurchasesController {
  constructor(
    private readonly checkout: CreditCheckoutService,
    private readonly autoRecharge: AutoRechargeService,
  ) {}

  @Post('checkout')
  @HttpCode(201)
  @Session({ orgRole: ['owner', 'admin'] })
  @ApiOperation({
    summary: 'Start a checkout for credit packs (owner or admin)',
    description:
      "A provider checkout of mode payment for the pack's price × quantity, for the organisation's customer (made when it has none), " +
      'with an invoice for the buyer. Allowed on any tier, with or without a subscription, beside an open subscription checkout. ' +
      'The credits are granted once the provider says the session is paid (its webhook events); GET /api/billing/session reports the session with its pack.',
  })
  @ApiCreatedResponse({ type: CreditCheckoutCreatedResponse })
  @ApiErrors(400, 401, 403, 429, 500, 503)
  createCheckout(@CurrentUser() user: AuthUser, @Body() body: CreateCreditCheckoutDto): Promise<CreditCheckoutCreatedResponse> {
    return this.checkout.create(user, body);
  }

  @Put('auto-recharge')
  @HttpCode(200)
  @Session({ orgRole: ['owner', 'admin'] })
  @ApiOperation({
    summary: 'Save the automatic top-up of a credits metric (owner or admin)',
    description:
      'When an accepted report leaves the metric\'s `available` below `threshold`, one `pack` is bought off-session (after the report, which never waits), ' +
      "paid with the customer's default payment method, at most `monthly_limit` a calendar month (UTC) and one at a time; its credits are granted when the provider says the invoice is paid. " +
      'A declined payment turns the setting off (`enabled` false, `last_error`) and sends `credits.recharge_failed`; saving it again turns it on. ' +
      'Needs a provider customer with a default payment method (409 no_payment_method); GET /api/licensing/credits shows the setting as `auto_recharge`.',
  })
  @ApiOkResponse({ type: AutoRechargeRecord })
  @ApiErrors(400, 401, 403, 404, 409, 429, 500, 503)
  saveAutoRecharge(@CurrentUser() user: AuthUser, @Actor() by: AuditActor, @Body() body: SaveAutoRechargeDto): Promise<AutoRechargeRecord> {
    return this.autoRecharge.save(user, by, body);
  }

  @Delete('auto-recharge')
  @HttpCode(204)
  @Session({ orgRole: ['owner', 'admin'] })
  @ApiOperation({ summary: 'Remove the automatic top-up of a credits metric (owner or admin)', description: 'No more packs are bought automatically; 204 also when there was none.' })
  @ApiNoContentResponse({ description: 'Removed (or there was none)' })
  @ApiErrors(400, 401, 403, 404, 500, 503)
  async deleteAutoRecharge(@CurrentUser() user: AuthUser, @Actor() by: AuditActor, @Query() query: AutoRechargeQuery): Promise<void> {
    await this.autoRecharge.remove(user, by, query);
  }
}
