import { Controller, HttpCode, Logger, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AppException } from '../common/app-exception';
import { LEDGER_STATUSES } from '../provider/provider-event';
import { EventDispatcher } from './event-dispatcher';
import { PROVIDER_SIGNATURE_HEADER, SIGNATURE_HEADER } from '../provider/provider-signature';
import { SignedByProvider } from './signed-by-provider.decorator';
import { WebhookRequest } from './webhook-signature.guard';

class WebhookAck {
  @ApiProperty({ example: 'evt_1Pgc76B7WZ01zgkWwyRHS12y' }) id: string;
  @ApiProperty({ enum: LEDGER_STATUSES, example: 'processed', description: 'What the service did with the event' })
  status: string;
  @ApiProperty({ nullable: true, type: String, example: null }) reason: string | null;
}

/** The route's full path. The HTTP layer leaves its body to the signature guard: it judges the raw bytes itself. */
export const WEBHOOK_ROUTE = '/api/webhooks/payprovider';

@ApiTags('webhooks')
@Controller('api/webhooks')
export class WebhookController {
  private readonly logger = new Logger('Webhook');

  constructor(private readonly dispatcher: EventDispatcher) {}

  @Post('payprovider')
  @HttpCode(200)
  @SignedByProvider()
  @ApiOperation({
    summary: 'Receive a payment-provider event',
    description:
      'Verified over the raw body with the signing secret(s); stored in the event ledger together with its effects. ' +
      '200 only after that is committed; 5xx means nothing was stored and the provider should retry.',
  })
  @ApiHeader({
    name: SIGNATURE_HEADER,
    required: false,
    description:
      '`t=<unix seconds>,v1=<hex>`: HMAC-SHA256 of `"<t>.<raw body>"` with the signing secret ' +
      `(PAYPROVIDER_WEBHOOK_SECRET). One of it and ${PROVIDER_SIGNATURE_HEADER} is required; with both, this one decides.`,
  })
  @ApiHeader({
    name: PROVIDER_SIGNATURE_HEADER,
    required: false,
    description: `The same value under the name the real provider (Stripe) sends it; read when ${SIGNATURE_HEADER} is absent.`,
  })
  @ApiBody({
    description: 'The provider event, as sent',
    schema: {
      type: 'object',
      example: {
        id: 'evt_1QxYz2AbCdEfGhIj',
        object: 'event',
        type: 'customer.subscription.updated',
        created: 1767225600,
        livemode: false,
        data: { object: { id: 'sub_1QxYz2AbCdEfGhIj', object: 'subscription', customer: 'cus_Q1a2B3c4D5e6F7', status: 'active' } },
      },
    },
  })
  @ApiOkResponse({ type: WebhookAck, description: 'Stored (processed, duplicate, stale, unmatched or ignored)' })
  @ApiErrors(400, 503)
  async receive(@Req() req: WebhookRequest): Promise<WebhookAck> {
    const event = req.providerEvent!;
    let result;
    try {
      result = await this.dispatcher.dispatch(event, req.rawBody!.toString('utf8'));
    } catch (err) {
      this.logger.error({ msg: 'webhook event not stored', event_id: event.id, type: event.type, err });
      throw new AppException('event_not_stored', 'The event could not be stored; retry later.');
    }
    return { id: result.id, status: result.status, reason: result.reason };
  }
}
