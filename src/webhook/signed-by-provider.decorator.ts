import { WebhookSignature } from '../common/route-auth.decorators';
import { WebhookSignatureGuard } from './webhook-signature.guard';

/**
 * Who may call the webhook route: the payment provider, proven by its signature over the raw body
 * (WebhookSignatureGuard, which stays in this module with the secrets and the event parsing).
 */
export const SignedByProvider = () => WebhookSignature(WebhookSignatureGuard);
