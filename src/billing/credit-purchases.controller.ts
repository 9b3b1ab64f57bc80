import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Session } from '../common/route-auth.decorators';
import { CreateCreditCheckoutDto, CreditCheckoutCreatedResponse } from './credit-checkout.dto';
import { CreditCheckoutService } from './credit-checkout.service';

/** Buying credits through the provider (spec §16.3, §16.4): packs at checkout. */
@ApiTags('billing')
@Controller('api/billing/credits')
export class CreditPurchasesController {
  constructor(private readonly checkout: CreditCheckoutService) {}

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
}
