import { createHmac } from 'node:crypto';
import request from 'supertest';
import { TEST_WEBHOOK_SECRET } from './test-app';

export const WEBHOOK_PATH = '/api/webhooks/payprovider';

/**
 * `t=<timestamp>,v1=<hex>`: the provider's signature header for a payload, computed with real HMAC.
 * Checked against the `stripe` SDK's `webhooks.generateTestHeaderString` in webhook-signing.spec.ts.
 */
export function signatureHeader(
  payload: string | Buffer,
  opts: { secret?: string; timestamp?: number } = {},
): string {
  const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
  return `t=${timestamp},v1=${sign(payload, timestamp, opts.secret ?? TEST_WEBHOOK_SECRET)}`;
}

export function sign(payload: string | Buffer, timestamp: number, secret = TEST_WEBHOOK_SECRET): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(payload).digest('hex');
}

/** What a delivery sends: the body as exact bytes and, unless given, a valid header for it. */
export interface Delivery {
  body: string;
  header?: string | null;
  secret?: string;
  timestamp?: number;
  contentType?: string;
}

/** POSTs a signed event (or exact body) to the webhook, as the provider would. */
export function deliver(target: string | object, event: object | Delivery): request.Test {
  const d: Delivery = 'body' in event && typeof (event as Delivery).body === 'string'
    ? (event as Delivery)
    : { body: JSON.stringify(event) };
  const header = d.header === undefined ? signatureHeader(d.body, { secret: d.secret, timestamp: d.timestamp }) : d.header;
  const req = request(target as any)
    .post(WEBHOOK_PATH)
    .set('Content-Type', d.contentType ?? 'application/json');
  if (header !== null) req.set('Payprovider-Signature', header);
  return req.send(d.body);
}
