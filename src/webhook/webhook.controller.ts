import { Controller, HttpCode, Logger, Post, Req, UseGuards } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProperty, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ApiErrors, SECURITY } from '../common/api-docs';
import { AppException } from '../common/app-exception';
import { Public } from '../common/public.decorator';
import { LEDGER_STATUSES } from './webhook-event.entity';
import { EventDispatcher } from './event-dispatcher';
import { SIGNATURE_HEADER } from '../billing/provider-signature';
import { WebhookRequest, WebhookSignatureGuard } from './webhook-signature.guard';

class WebhookAck {
  @ApiProperty({ example: 'evt_1Pgc76B7WZ01zgkWwyRHS12y' }) id: string;
  @ApiProperty({ enum: LEDGER_STATUSES, example: 'processed', description: 'What the service did with the event' })
  status: string;
  @ApiProperty({ nullable: true, type: String, example: null }) reason: string | null;
}

@ApiTags('webhooks')
@Public()
@Controller('api/webhooks')
export class WebhookController {
  private readonly logger = new Logger('Webhook');

  constructor(private readonly dispatcher: EventDispatcher) {}

  @Post('payprovider')
  @HttpCode(200)
  @UseGuards(WebhookSignatureGuard)
  @ApiSecurity(SECURITY.webhookSignature)
  @ApiOperation({
    summary: 'Receive a payment-provider event',
    description:
      'Verified over the raw body with the signing secret(s); stored in the event ledger together with its effects. ' +
      '200 only after that is committed; 5xx means nothing was stored and the provider should retry.',
  })
  @ApiHeader({ name: SIGNATURE_HEADER, required: true, description: '`t=<unix seconds>,v1=<hex HMAC-SHA256>`' })
  @ApiBody({ description: 'The provider event, as sent', schema: { type: 'object' } })
  @ApiOkResponse({ type: WebhookAck, description: 'Stored (processed, duplicate, stale, unmatched or ignored)' })
  @ApiErrors(400, 503)
  async receive(@Req() req: WebhookRequest): Promise<WebhookAck> {
    const event = req.providerEvent!;
    let result;
    try {
      result = await this.dispatcher.dispatch(event);
    } catch (err) {
      this.logger.error({ msg: 'webhook event not stored', event_id: event.id, type: event.type, err });
      throw new AppException(503, 'event_not_stored', 'The event could not be stored; retry later.');
    }
    if (result.rejection) throw new AppException(400, result.rejection.code, result.rejection.message);
    return { id: result.id, status: result.status, reason: result.reason };
  }
}
