import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A Standard Webhooks secret, as NOTIFY_SECRET takes it. */
export const newNotifySecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body, when the signature verified. */
  json?: any;
  verified: boolean;
  /** What the receiver answered. */
  status: number;
  at: number;
}

export interface NotificationReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** The verified messages it answered 2xx, in arrival order. */
  accepted(organisationId?: string): ReceivedRequest[];
  /**
   * The status for a verified request; `nth` counts this webhook-id's requests (1 = first). Default 200.
   * 0: never answer (the sender's timeout must end the attempt).
   */
  respond: (req: ReceivedRequest, nth: number) => number;
  close(): Promise<void>;
}

/**
 * The web app's side of the notifications: an HTTP server that verifies each request with the
 * `standardwebhooks` package, as a receiver should, and answers 400 to one that does not verify.
 */
export async function startReceiver(secret: string): Promise<NotificationReceiver> {
  const webhook = new Webhook(secret);
  const receiver: NotificationReceiver = {
    url: '',
    requests: [],
    accepted: (org) =>
      receiver.requests.filter(
        (r) => r.verified && r.status >= 200 && r.status < 300 && (org === undefined || r.json.data.organisation_id === org),
      ),
    respond: () => 200,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // also those of requests it never answered
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: ReceivedRequest = { headers: req.headers, body, verified: false, status: 400, at: Date.now() };
      try {
        r.json = webhook.verify(body, req.headers as Record<string, string>);
        r.verified = true;
      } catch {
        r.verified = false;
      }
      if (r.verified) {
        const nth = receiver.requests.filter((p) => p.headers['webhook-id'] === req.headers['webhook-id']).length + 1;
        r.status = receiver.respond(r, nth);
      }
      receiver.requests.push(r);
      if (r.status !== 0) res.writeHead(r.status).end();
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/license`;
  return receiver;
}
