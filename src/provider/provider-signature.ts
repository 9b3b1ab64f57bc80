import { createHmac } from 'node:crypto';

/**
 * The provider's webhook signature scheme (v1), used by the sandbox to sign what it delivers and by the
 * webhook to verify what it receives (webhook/signature.ts), so the two cannot drift apart.
 */
export const SIGNATURE_HEADER = 'Payprovider-Signature';

/** The name under which the real provider (Stripe) sends the very same value; read when SIGNATURE_HEADER is absent. */
export const PROVIDER_SIGNATURE_HEADER = 'Stripe-Signature';

/** Lower-case hex HMAC-SHA256 of `"<t>.<raw body>"`. */
export function computeSignature(timestamp: number, rawBody: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

/** The signature header: `t=<unix seconds>,v1=<signature>`. */
export function signatureHeader(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${computeSignature(timestamp, Buffer.from(body, 'utf8'), secret)}`;
}
