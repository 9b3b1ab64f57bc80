import { CanActivate, ExecutionContext, Injectable, Logger, RawBodyRequest } from '@nestjs/common';
import type { Request } from 'express';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { webhookEvents } from '../common/metrics';
import { ProviderEvent } from '../provider/provider-event';
import { parseEvent } from './event-parsing';
import { verifySignature } from './signature';

export type WebhookRequest = RawBodyRequest<Request> & { providerEvent?: ProviderEvent };

/**
 * Verifies the signature over the exact bytes received, then parses the event and attaches it to the request.
 * Nothing reaches the controller (or the database) unless both succeed. The signature is the interface's
 * `Payprovider-Signature`, else `Stripe-Signature`, the name the real provider sends it under (spec §6): with
 * both, `Payprovider-Signature` alone decides.
 */
@Injectable()
export class WebhookSignatureGuard implements CanActivate {
  private readonly logger = new Logger('Webhook');

  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<WebhookRequest>();
    try {
      const header = req.headers['payprovider-signature'] ?? req.headers['stripe-signature'];
      // The JSON body parser keeps the raw bytes; any other content type leaves none to verify.
      if (header !== undefined && !req.rawBody) {
        throw new AppException('invalid_event', 'The event must be sent as application/json.');
      }
      verifySignature({
        rawBody: req.rawBody ?? Buffer.alloc(0),
        header,
        secrets: this.config.webhookSecrets,
        toleranceS: this.config.webhookToleranceS,
      });
      req.providerEvent = parseEvent(req.rawBody!);
      return true;
    } catch (err) {
      if (err instanceof AppException) {
        webhookEvents.inc({ type: 'unknown', outcome: 'rejected' });
        // Never the header or the body: only why it was refused.
        this.logger.warn({ msg: 'webhook rejected', code: err.code });
      }
      throw err;
    }
  }
}
