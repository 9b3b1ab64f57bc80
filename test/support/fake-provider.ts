import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * A small Stripe-compatible HTTP server for tests: the real `stripe` SDK talks to it through
 * PAYPROVIDER_API_URL. It implements only what the service calls:
 *
 *   GET  /v1/checkout/sessions/:id     → a stored session (see `addCheckoutSession`), else 404 resource_missing
 *   POST /v1/checkout/sessions         → creates and stores an open, unpaid session (url `${url}/pay/:id`)
 *   POST /v1/billing_portal/sessions   → a portal session for `customer` (url `${url}/portal/:id`)
 *
 * Usage:
 *   const fake = await startFakeProvider();
 *   startTestApp({ env: { ...fakeProviderEnv(fake), PAYPROVIDER_PRICE_PRO: 'price_pro' } });
 *   fake.addCheckoutSession({ payment_status: 'paid', metadata: { organisation_id, tier: 'pro' } });
 *   fake.failNext(3, { status: 503 });   // or 'reset' | 'hang' | { status: 400, code: 'resource_missing' }
 *   expect(fake.requests).toEqual([...]); fake.reset(); await fake.close();
 *
 * Every request is recorded (also failed ones) with its form body parsed into nested objects/arrays
 * (`line_items[0][price]` → `{ line_items: [{ price }] }`); values stay strings, as sent.
 */

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. /v1/checkout/sessions/cs_test_1 */
  path: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

export type Failure =
  | { status: number; type?: string; code?: string; message?: string }
  /** Destroys the socket without answering (ECONNRESET for the client). */
  | 'reset'
  /** Never answers (the client's timeout fires). */
  | 'hang';

export interface FakeProvider {
  url: string;
  requests: RecordedRequest[];
  /** Checkout sessions by id, as the provider would return them; tests may edit them in place. */
  sessions: Map<string, Record<string, any>>;
  /** Stores a checkout session: fixture defaults, a fresh `cs_test_…` id, then `overrides`. */
  addCheckoutSession(overrides?: Record<string, unknown>): Record<string, any>;
  /** The next `count` requests (any route) fail as described; queued failures run in order. */
  failNext(count: number, failure: Failure): void;
  /** Clears recorded requests, queued failures and stored sessions. */
  reset(): void;
  close(): Promise<void>;
}

// Trimmed from the provider's published fixtures (checkout.session, billing_portal.session): the fields
// a caller reads, with their real names and nesting.
const CHECKOUT_SESSION = {
  object: 'checkout.session',
  amount_subtotal: null,
  amount_total: null,
  automatic_tax: { enabled: false, liability: null, status: null },
  cancel_url: null,
  client_reference_id: null,
  currency: null,
  customer: null,
  customer_details: null,
  customer_email: null,
  expires_at: 0,
  invoice: null,
  livemode: false,
  metadata: {},
  mode: 'subscription',
  payment_status: 'unpaid',
  status: 'open',
  subscription: null,
  success_url: null,
  ui_mode: 'hosted',
  url: null,
};
const PORTAL_SESSION = {
  object: 'billing_portal.session',
  configuration: 'bpc_1Pgc7HB7WZ01zgkWxH2EPWRX',
  flow: null,
  livemode: false,
  locale: null,
  on_behalf_of: null,
};

export async function startFakeProvider(): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const sessions = new Map<string, Record<string, any>>();
  let failures: Failure[] = [];
  let url = '';

  const addCheckoutSession = (overrides: Record<string, unknown> = {}) => {
    const session = { ...clone(CHECKOUT_SESSION), id: newId('cs_test_'), created: now(), expires_at: now() + 86_400, ...overrides };
    sessions.set(session.id, session);
    return session;
  };

  const route = (req: RecordedRequest): [number, unknown] => {
    const auth = req.headers.authorization;
    if (!auth || !/^Bearer sk_\S+$/.test(auth)) {
      return [401, stripeError('invalid_request_error', undefined, 'You did not provide a valid API key.')];
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && retrieve) {
      const session = sessions.get(decodeURIComponent(retrieve[1]));
      if (session) return [200, session];
      return [404, stripeError('invalid_request_error', 'resource_missing', `No such checkout.session: '${retrieve[1]}'`)];
    }
    if (req.method === 'POST' && req.path === '/v1/checkout/sessions') {
      const b = req.body as Record<string, any>;
      const id = newId('cs_test_');
      return [200, addCheckoutSession({
        id,
        mode: b.mode ?? 'payment',
        customer: b.customer ?? null,
        client_reference_id: b.client_reference_id ?? null,
        metadata: b.metadata ?? {},
        success_url: b.success_url ?? null,
        cancel_url: b.cancel_url ?? null,
        payment_status: 'unpaid',
        status: 'open',
        url: `${url}/pay/${id}`,
      })];
    }
    if (req.method === 'POST' && req.path === '/v1/billing_portal/sessions') {
      const b = req.body as Record<string, any>;
      if (!b.customer) return [400, stripeError('invalid_request_error', 'parameter_missing', 'Missing required param: customer.')];
      const id = newId('bps_');
      return [200, {
        ...PORTAL_SESSION,
        id,
        created: now(),
        customer: b.customer,
        return_url: b.return_url ?? null,
        url: `${url}/portal/${id}`,
      }];
    }
    return [404, stripeError('invalid_request_error', undefined, `Unrecognized request URL (${req.method}: ${req.path}).`)];
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    const target = new URL(req.url ?? '/', 'http://fake');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: target.pathname,
      query: parseForm(target.searchParams),
      body: parseForm(new URLSearchParams(raw)),
      headers: req.headers,
    };
    requests.push(recorded);
    const failure = failures.shift();
    if (failure === 'reset') return void req.socket.destroy();
    if (failure === 'hang') return;
    const [status, body] = failure
      ? [failure.status, stripeError(failure.type ?? typeFor(failure.status), failure.code, failure.message ?? 'Injected failure')]
      : route(recorded);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': newId('req_') });
    res.end(JSON.stringify(body));
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    sessions,
    addCheckoutSession,
    failNext: (count, failure) => failures.push(...Array<Failure>(count).fill(failure)),
    reset: () => {
      requests.length = 0;
      failures = [];
      sessions.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const FAKE_SECRET_KEY = 'sk_test_fake_provider_key';

/** Env that points the app's real SDK at the fake, with a short per-attempt timeout for hang tests. */
export function fakeProviderEnv(fake: FakeProvider, timeoutMs = 300): Record<string, string> {
  return {
    PAYPROVIDER_SECRET_KEY: FAKE_SECRET_KEY,
    PAYPROVIDER_API_URL: fake.url,
    PAYPROVIDER_TIMEOUT_MS: String(timeoutMs),
  };
}

/** `a[b][0][c]=v` form keys, as the SDK encodes them, into nested objects and arrays. */
export function parseForm(params: URLSearchParams): Record<string, unknown> {
  const root: Record<string, any> = {};
  for (const [key, value] of params) {
    const parts = key.split(/\]\[|\[|\]/).filter(Boolean);
    let node: any = root;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) {
        node[part] = value;
        return;
      }
      node[part] ??= /^\d+$/.test(parts[i + 1]) ? [] : {};
      node = node[part];
    });
  }
  return root;
}

function stripeError(type: string, code: string | undefined, message: string) {
  return { error: { type, ...(code ? { code } : {}), message } };
}

function typeFor(status: number): string {
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const newId = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);
const clone = <T>(value: T): T => structuredClone(value);
