import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { invoiceRoutes } from './fake-invoices';
import { subscriptionChangeRoutes } from './fake-subscription-changes';
import { duplicateIdentifierMessage, METER_IDENTIFIER_UNIQUE_S, meterTimestampProblem } from '../../src/provider/meter-rules';
import providerApi from './provider-api.json';
import { providerEvent } from './provider-events';
import providerFixtures from './provider-fixtures.json';
import { signatureHeader, WEBHOOK_PATH } from './webhook-signing';

/**
 * A Stripe-compatible HTTP server for tests, as strict as the provider on what the service calls; the real
 * `stripe` SDK talks to it through PAYPROVIDER_API_URL.
 *
 *   GET  /v1/checkout/sessions/:id      → a stored session (see `addCheckoutSession`), else 404 resource_missing; an
 *                                         id over the provider's 66 characters → 400 naming `session`
 *   POST /v1/checkout/sessions          → an open, unpaid session (url `${url}/pay/:id`, `ui_mode` hosted_page: the
 *                                         pinned API version's elements, embedded_page and form are refused as not
 *                                         implemented, the older hosted and embedded as the provider does); its mode's rules (see
 *                                         checkoutModeProblem): one-time prices in mode payment, recurring in
 *                                         subscription, `invoice_creation` in payment only, `subscription_data` in
 *                                         subscription only; `currency` one that every line item's price has (its
 *                                         own or a currency option), else 400 naming `currency`
 *   POST /v1/checkout/sessions/:id/expire → the session, now `expired` (only an `open` one, else 400)
 *   POST /v1/billing_portal/sessions    → a portal session for `customer` (url `${url}/portal/:id`)
 *   POST /v1/customers                  → a new customer (`metadata`, `name`, `email` kept)
 *   GET  /v1/customers/:id              → a stored customer (see `addCustomer`); a deleted one as `{ id, deleted: true }`; else 404
 *   GET  /v1/subscriptions/:id          → a stored subscription (see `addSubscription`), else 404
 *   GET  /v1/prices/:id                 → a stored price (see `addPrice`), else 404 resource_missing; its
 *                                         `currency_options` (its own currency among them) only with
 *                                         `expand[]=currency_options`, as the provider includes them
 *   GET  /v1/subscriptions              → stored subscriptions, `status` (`all`, `ended`, one status; none: all but
 *                                         canceled ones, as the provider), `customer`, `expand[]=data.schedule` (each
 *                                         one's schedule as the object of `schedules`, as the provider expands it)
 *   GET  /v1/events                     → stored events (see `addEvent`) and those it sent, `types[]`, `type`,
 *                                         `created[gte|gt|lte|lt]`
 *   subscription changes, invoice previews and subscription schedules: see fake-subscription-changes.ts
 *   one-off invoices and invoice items (create, finalize, pay, retrieve): see fake-invoices.ts
 *   POST /v1/billing/meter_events       → a meter event, kept in `meterEvents`: `payload[stripe_customer_id]` a known
 *                                         customer, `payload[value]` a whole number, `timestamp` within the past 35
 *                                         days or 5 minutes ahead, an `identifier` seen in the last 24 h → 400 "An
 *                                         event already exists with identifier …", a second call for a customer and
 *                                         meter while one is under way → 429 (the provider's rules, meter-rules.ts)
 *
 * Events: every change it makes queues the events the provider sends for it (also listed by GET /v1/events);
 * `deliverEvents()` sends the queued ones, in order, signed with real HMAC, to `webhookTarget(url)`.
 *
 * Lists as the provider's: `{ object: 'list', data, has_more, url }`, newest first (by `created`, then the
 * later stored first), pages of `limit` (1–100, default 10) after `starting_after` or before
 * `ending_before` (one of them; an id not in the list → 400 resource_missing). A parameter the provider
 * accepts but this double does not implement → 400 saying so, rather than an answer that ignores it.
 *
 * Like the provider: every parameter, and the id in the path, is checked against the published API description
 * kept in provider-api.json (an unknown one → 400 parameter_unknown; a wrong type, a too-long string or id, a
 * value outside an enum → 400 naming the param); a customer or price it does not know → 400 resource_missing
 * with that param; an Idempotency-Key reused with other parameters → 400 idempotency_error, reused with the
 * same → the first answer again (`Idempotent-Replayed: true`), and one still being carried out → 409
 * `idempotency_key_in_use`; errors carry the provider's error object
 * (`type`, `code`, `message`, `param`, `doc_url`, `request_log_url`), and 5xx/429/409 answers say
 * `Stripe-Should-Retry: true`. With `rateLimit(n)`, more than n requests within a second are answered 429
 * `rate_limit` as the provider answers them (its test mode allows 25). Objects are the provider's published fixtures (provider-fixtures.json) with
 * the request's values.
 *
 * Usage:
 *   const fake = await startFakeProvider({ prices: ['price_pro'] });
 *   startTestApp({ env: { ...fakeProviderEnv(fake), PAYPROVIDER_PRICE_PRO: 'price_pro' } });
 *   fake.addCustomer('cus_1'); fake.addCheckoutSession({ payment_status: 'paid', metadata: { … } });
 *   fake.failNext(3, { status: 503 });   // or 'reset' | 'hang' | { status: 400, code: 'resource_missing' }
 *   expect(fake.requests).toEqual([...]); fake.reset(); await fake.close();
 *
 * Every request is recorded (also failed ones) with its arrival time and its form body parsed into nested
 * objects/arrays (`line_items[0][price]` → `{ line_items: [{ price }] }`); values stay strings, as sent.
 * `busiestSecond()` counts them as the provider's rate limiter would.
 */

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. /v1/checkout/sessions/cs_test_1 */
  path: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** Arrival, in milliseconds (performance.now()). */
  at: number;
}

export type Failure =
  /** `retryAfter`: the seconds of a `Retry-After` header, as the provider sends with a 429. */
  | { status: number; type?: string; code?: string; message?: string; param?: string; retryAfter?: number }
  /** Destroys the socket without answering (ECONNRESET for the client). */
  | 'reset'
  /** Never answers (the client's timeout fires). */
  | 'hang';

/** Answers a request it implements, else undefined (the next route is asked). */
export type FakeRoute = (req: RecordedRequest) => [number, unknown] | undefined;

export interface FakeProvider {
  url: string;
  requests: RecordedRequest[];
  /** Checkout sessions by id, as the provider would return them; tests may edit them in place. */
  sessions: Map<string, Record<string, any>>;
  /** Subscriptions by id, as the provider would return them now. */
  subscriptions: Map<string, Record<string, any>>;
  /** Stores a checkout session: fixture, a fresh `cs_test_…` id, then `overrides`. */
  addCheckoutSession(overrides?: Record<string, unknown>): Record<string, any>;
  /** Stores a subscription: fixture, then `overrides` (give at least `id`). */
  addSubscription(overrides: Record<string, unknown>): Record<string, any>;
  /** Billing meter events the provider accepted, in arrival order (`at`: arrival, Unix seconds). */
  meterEvents: { identifier: string; event_name: string; customer: string; value: number; timestamp: number; at: number }[];
  /** Events the provider keeps (listed by GET /v1/events). */
  events: Record<string, any>[];
  addEvent(event: Record<string, any>): void;
  /** A customer the provider knows (checkout and portal refuse any other): the fixture, then `overrides`. */
  addCustomer(id?: string, overrides?: Record<string, unknown>): string;
  /** Customers by id, as the provider would return them; tests may edit them in place. */
  customers: Map<string, Record<string, any>>;
  /** Deletes the customer: checkout and portal refuse it, GET /v1/customers/:id answers the provider's `deleted` stub. */
  deleteCustomer(id: string): void;
  /** Sets (or clears) the customer's `invoice_settings.default_payment_method`: what an invoice is paid with. */
  setDefaultPaymentMethod(id: string, paymentMethod: string | null): void;
  /**
   * A price the provider knows (checkout refuses any other; GET /v1/prices/:id answers it): the fixture (monthly,
   * active, 2000 usd), then `overrides`. `currency_options`: its other currencies, `{ eur: { unit_amount: 1800 } }`,
   * each filled to the provider's shape (`custom_unit_amount`, `tax_behavior`, `unit_amount_decimal`).
   */
  addPrice(id: string, overrides?: Record<string, unknown>): Record<string, any>;
  /** Prices by id, as the provider would return them; tests may edit them in place. */
  prices: Map<string, Record<string, any>>;
  /** More than `perSecond` requests within any second are refused with the provider's 429; undefined: no limit. */
  rateLimit(perSecond: number | undefined): void;
  /** Requests refused by the rate limit since the last reset. */
  readonly rateLimited: number;
  /** The next `count` requests (any route) fail as described; queued failures run in order. */
  failNext(count: number, failure: Failure): void;
  /** Every request whose path starts with `prefix` fails as described (undefined: no more), until reset. */
  failPath(prefix: string, failure: Failure | undefined): void;
  /** The most requests that arrived within any one second (a sliding window), of those recorded. */
  busiestSecond(): number;
  /** Subscription schedules by id, as the provider would return them now. */
  schedules: Map<string, Record<string, any>>;
  /** One-off invoices by id (fake-invoices.ts), as the provider would return them now. */
  invoices: Map<string, Record<string, any>>;
  /** Every payment of this customer's fails (a declined card). */
  declineCards(customerId: string): void;
  /** This customer's address gives no tax location (a subscription with automatic tax cannot change). */
  withoutTaxLocation(customerId: string): void;
  /** The service whose webhook (`<url>/api/webhooks/payprovider`) receives the events `deliverEvents` sends. */
  webhookTarget(url: string): void;
  /** The events queued since the last delivery, oldest first. */
  readonly queuedEvents: Record<string, any>[];
  /** Sends the queued events one after the other, as the provider does; answers the webhook's statuses. */
  deliverEvents(): Promise<number[]>;
  /** Clears recorded requests, queued failures, the rate limit, stored sessions, subscriptions and idempotency keys. */
  reset(): void;

  // --- held requests (the webhook's tests of a hung provider) ---
  /**
   * Requests whose path starts with `prefix` get no answer until `release()`, as a provider that takes its time:
   * for as long as the test needs, whatever the client's timeout; a request the client gave up on is still
   * carried out on release, as the provider does. `held()`: how many wait now. `after`: the request is carried
   * out first (its effects and events happen) and only its answer waits; `method`: only requests of it. While a
   * POST is held, its Idempotency-Key is in use: another request with it is answered 409
   * `idempotency_key_in_use` at once (the SDK's retry of a request that timed out meets that).
   */
  hold(prefix: string, opts?: { after?: boolean; method?: string }): void;
  held(): number;
  /** Stops holding; the held requests are then answered as usual. */
  release(): void;
  close(): Promise<void>;
}

interface Rule {
  type: string;
  maxLength?: number;
  values?: string[];
  keys?: Record<string, Schema>;
  items?: Schema | Record<string, Schema>;
}
type Schema = 'any' | 'string' | Rule;
type Problem = { code?: string; param: string; message: string };
const API = providerApi as unknown as { operations: Record<string, { path?: Record<string, Schema>; params: Record<string, Schema> }> };

export async function startFakeProvider(opts: { prices?: string[] } = {}): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const sessions = new Map<string, Record<string, any>>();
  const subscriptions = new Map<string, Record<string, any>>();
  // Customers it knows, as it answers them; a deleted one is answered as the provider's stub.
  const customers = new Map<string, Record<string, any>>();
  const deletedCustomers = new Set<string>();
  const addCustomer = (id = newId('cus_'), overrides: Record<string, unknown> = {}) => {
    customers.set(id, { ...fixture('customer'), id, created: nowSeconds(), discount: null, livemode: false, metadata: {}, ...overrides });
    deletedCustomers.delete(id);
    return id;
  };
  const prices = new Map<string, Record<string, any>>();
  // Each price's other currencies, kept apart: the provider shows them only when asked (not in a subscription's items).
  const priceOptions = new Map<string, Record<string, ReturnType<typeof currencyOption>>>();
  const addPrice = (id: string, overrides: Record<string, unknown> = {}) => {
    const { currency_options: options, ...rest } = overrides as { currency_options?: Record<string, Record<string, unknown>> };
    const price = { ...fixture('price'), id, created: nowSeconds(), livemode: false, lookup_key: null, ...rest };
    priceOptions.set(id, Object.fromEntries(Object.entries(options ?? {}).map(([c, o]) => [c, currencyOption(o)])));
    prices.set(id, price);
    return price;
  };
  const currenciesOf = (price: Record<string, any>) => [price.currency as string, ...Object.keys(priceOptions.get(price.id) ?? {})];
  for (const id of opts.prices ?? []) addPrice(id);
  const idempotent = new Map<string, { fingerprint: string; status: number; body: unknown }>();
  // Keys of POSTs being carried out (held ones too), until their answer is kept: another request with one is
  // answered 409 at once. Each request's own mark, so that it frees only what it took.
  const keysInFlight = new Map<string, object>();
  const free = (key: string | undefined, mark: object) => {
    if (key !== undefined && keysInFlight.get(key) === mark) keysInFlight.delete(key);
  };
  const events: Record<string, any>[] = [];
  const meterEvents: FakeProvider['meterEvents'] = [];
  const meterCallsInFlight = new Set<string>();
  let failures: Failure[] = [];
  const pathFailures = new Map<string, Failure>();
  let url = '';
  let perSecond: number | undefined;
  let rateLimited = 0;
  // Arrival times (ms) of the requests of the last second, for the rate limit.
  let recent: number[] = [];
  const overRate = () => {
    if (perSecond === undefined) return false;
    const now = Date.now();
    recent = recent.filter((t) => t > now - 1000);
    if (recent.length >= perSecond) return true;
    recent.push(now);
    return false;
  };
  // Held requests (see `hold`).
  let holdPrefix: string | undefined;
  let holdOpts: { after?: boolean; method?: string } = {};
  let heldRequests: (() => void)[] = [];

  const addCheckoutSession = (overrides: Record<string, unknown> = {}) => {
    const session = {
      ...fixture('checkout.session'),
      id: newId('cs_test_'),
      created: nowSeconds(),
      expires_at: nowSeconds() + 86_400,
      livemode: false,
      metadata: {},
      ui_mode: 'hosted_page',
      ...overrides,
    };
    sessions.set(session.id, session);
    return session;
  };

  // A list's objects in the provider's order, kept while nothing is stored: a walk of 200 pages sorts once.
  const listings = new Map<string, Record<string, any>[]>();
  const listing = (req: RecordedRequest, objects: () => Record<string, any>[]) => {
    const { limit: _l, starting_after: _s, ending_before: _e, ...filters } = req.query;
    const key = `${req.path} ${JSON.stringify(filters)} ${events.length} ${subscriptions.size}`;
    if (!listings.has(key)) listings.set(key, newestFirst(objects()));
    return listings.get(key)!;
  };

  // Subscription changes (fake-subscription-changes.ts) and the events they send.
  const schedules = new Map<string, Record<string, any>>();
  const declining = new Set<string>();
  const noTaxLocation = new Set<string>();
  let queuedEvents: Record<string, any>[] = [];
  let webhookUrl: string | undefined;
  const changeRoutes = subscriptionChangeRoutes({
    subscriptions,
    prices,
    schedules,
    declining,
    noTaxLocation,
    emit: (type, object, previousAttributes) => {
      const event: Record<string, any> = providerEvent(type, structuredClone(object));
      if (previousAttributes) event.data.previous_attributes = previousAttributes;
      events.push(event);
      listings.clear();
      queuedEvents.push(event);
    },
  });
  const invoices = new Map<string, Record<string, any>>();
  const pendingItems = new Map<string, Record<string, any>[]>();
  const emit = (type: string, object: Record<string, any>) => {
    const event: Record<string, any> = providerEvent(type, structuredClone(object));
    events.push(event);
    listings.clear();
    queuedEvents.push(event);
  };
  const invoiceRoute = invoiceRoutes({ customers, prices, invoices, pendingItems, declining, fixture, emit });
  const meterEvent = (b: Record<string, any>): [number, unknown] => {
    const refuse = (param: string, message: string, code?: string): [number, unknown] => [400, stripeError({ type: 'invalid_request_error', code, param, message })];
    for (const param of ['event_name', 'payload']) {
      if (b[param] === undefined) return refuse(param, `Missing required param: ${param}.`, 'parameter_missing');
    }
    const payload = b.payload as Record<string, unknown>;
    if (typeof payload !== 'object' || Object.values(payload).some((v) => typeof v !== 'string')) return refuse('payload', 'Invalid payload: a hash of strings.');
    const customer = payload.stripe_customer_id as string | undefined;
    if (customer === undefined) return refuse('payload', 'Customer mapping key stripe_customer_id not found in payload.', 'meter_event_no_customer_defined');
    if (!customers.has(customer)) return refuse('payload[stripe_customer_id]', `No such customer: '${customer}'`, 'meter_event_customer_not_found');
    if (typeof payload.value !== 'string' || !/^-?\d+$/.test(payload.value)) return refuse('payload[value]', 'Meter event value must be a whole number.', 'meter_event_invalid_value');
    const at = nowSeconds();
    const timestamp = b.timestamp === undefined ? at : Number(b.timestamp);
    const late = meterTimestampProblem(timestamp, at);
    if (late) return refuse('timestamp', late.slice(late.indexOf(': ') + 2), late.slice(0, late.indexOf(':')));
    const identifier: string = b.identifier ?? newId('idmp_');
    if (meterEvents.some((e) => e.identifier === identifier && e.at > at - METER_IDENTIFIER_UNIQUE_S)) return refuse('identifier', duplicateIdentifierMessage(identifier));
    meterEvents.push({ identifier, event_name: b.event_name, customer, value: Number(payload.value), timestamp, at });
    return [200, { object: 'billing.meter_event', created: at, event_name: b.event_name, identifier, livemode: false, payload, timestamp }];
  };

  const route = (req: RecordedRequest): [number, unknown] => {
    const auth = req.headers.authorization;
    if (!auth || !/^Bearer sk_\S+$/.test(auth)) {
      return [401, stripeError({ type: 'invalid_request_error', message: 'You did not provide a valid API key.' })];
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && retrieve) {
      const id = decodeURIComponent(retrieve[1]);
      const invalid = validate('GET /v1/checkout/sessions/{session}', req.query, { session: id });
      if (invalid) return invalid;
      const session = sessions.get(id);
      if (session) return [200, session];
      return [404, missing('checkout.session', id, 'session')];
    }
    const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && subscription) {
      const id = decodeURIComponent(subscription[1]);
      const invalid = validate('GET /v1/subscriptions/{subscription_exposed_id}', req.query, { subscription_exposed_id: id }) ?? unsupportedExpansion(req.query, []);
      if (invalid) return invalid;
      const found = subscriptions.get(id);
      if (found) return [200, found];
      return [404, missing('subscription', id, 'id')];
    }
    const price = /^\/v1\/prices\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && price) {
      const id = decodeURIComponent(price[1]);
      const invalid = validate('GET /v1/prices/{price}', req.query, { price: id }) ?? unsupportedExpansion(req.query, ['currency_options']);
      if (invalid) return invalid;
      const found = prices.get(id);
      if (!found) return [404, missing('price', id, 'price')];
      // Includable only: the provider answers currency_options when asked, its own currency among them.
      if (!expansions(req.query).includes('currency_options')) return [200, found];
      return [200, { ...found, currency_options: { [found.currency]: currencyOption(found), ...priceOptions.get(id) } }];
    }
    if (req.method === 'GET' && req.path === '/v1/subscriptions') {
      const invalid =
        validate('GET /v1/subscriptions', req.query) ?? unsupported(req.query, ['status', 'customer', ...LIST_PARAMS]) ?? unsupportedExpansion(req.query, ['data.schedule']);
      if (invalid) return invalid;
      const q = req.query as { status?: string; customer?: string; expand?: string[] };
      const shown = (s: Record<string, any>) =>
        q.status === 'all' ||
        (q.status === undefined ? s.status !== 'canceled' : q.status === 'ended' ? ['canceled', 'incomplete_expired'].includes(s.status) : s.status === q.status);
      const listed = listing(req, () => [...subscriptions.values()].filter((s) => shown(s) && (q.customer === undefined || s.customer === q.customer)));
      const page = listPage(listed, req, 'subscription');
      if (!q.expand?.includes('data.schedule') || page[0] !== 200) return page;
      // An expanded schedule is the schedule object; a subscription without one keeps its null.
      const list = page[1] as { data: Record<string, any>[] };
      const expanded = (s: Record<string, any>) => (typeof s.schedule === 'string' && schedules.has(s.schedule) ? { ...s, schedule: schedules.get(s.schedule) } : s);
      return [200, { ...list, data: list.data.map(expanded) }];
    }
    if (req.method === 'GET' && req.path === '/v1/events') {
      const invalid =
        validate('GET /v1/events', req.query) ?? unsupported(req.query, ['types', 'type', 'created', ...LIST_PARAMS]) ?? unsupportedExpansion(req.query, []);
      if (invalid) return invalid;
      const q = req.query as { types?: string[]; type?: string; created?: Partial<Record<'gt' | 'gte' | 'lt' | 'lte', string>> };
      const c = q.created ?? {};
      const inRange = (t: number) =>
        !((c.gt && t <= Number(c.gt)) || (c.gte && t < Number(c.gte)) || (c.lt && t >= Number(c.lt)) || (c.lte && t > Number(c.lte)));
      const listed = listing(req, () => events.filter((e) => (!q.types || q.types.includes(e.type)) && (!q.type || e.type === q.type) && inRange(e.created)));
      return listPage(listed, req, 'event');
    }
    if (req.method === 'POST' && req.path === '/v1/checkout/sessions') {
      const invalid = validate('POST /v1/checkout/sessions', req.body);
      if (invalid) return invalid;
      const b = req.body as Record<string, any>;
      // The pinned API version's modes (`hosted` and `embedded` before it: refused by the enum above); only the
      // hosted page, which gives the session a url, is carried out here.
      if (b.ui_mode !== undefined && b.ui_mode !== 'hosted_page') {
        return [400, stripeError({ type: 'invalid_request_error', param: 'ui_mode', message: `The test double does not implement ui_mode=${b.ui_mode}` })];
      }
      if (b.customer !== undefined && !customers.has(b.customer)) return [400, missing('customer', b.customer, 'customer')];
      const items: Record<string, any>[] = b.line_items ?? [];
      if ((b.mode === 'subscription' || b.mode === 'payment') && !items.length) {
        return [400, stripeError({ type: 'invalid_request_error', code: 'parameter_missing', param: 'line_items', message: 'Missing required param: line_items.' })];
      }
      const unknownPrice = items.findIndex((item) => item.price !== undefined && !prices.has(item.price));
      if (unknownPrice >= 0) return [400, missing('price', items[unknownPrice].price, `line_items[${unknownPrice}][price]`)];
      const modeProblem = checkoutModeProblem(b, items.map((item) => prices.get(item.price)));
      if (modeProblem) return [400, stripeError({ type: 'invalid_request_error', ...modeProblem })];
      const itemPrices = items.flatMap((item) => prices.get(item.price) ?? []);
      const lacking = b.currency === undefined ? undefined : itemPrices.find((p) => !currenciesOf(p).includes(b.currency));
      if (lacking) {
        const sold = currenciesOf(lacking).map((c) => `\`${c}\``).join(', ');
        return [
          400,
          stripeError({ type: 'invalid_request_error', param: 'currency', message: `The price specified supports currencies of ${sold} which doesn't include the expected currency of \`${b.currency}\`.` }),
        ];
      }
      const id = newId('cs_test_');
      return [
        200,
        addCheckoutSession({
          id,
          mode: b.mode ?? 'payment',
          currency: b.currency ?? itemPrices[0]?.currency ?? null,
          customer: b.customer ?? null,
          client_reference_id: b.client_reference_id ?? null,
          metadata: b.metadata ?? {},
          invoice_creation: b.invoice_creation ? { enabled: b.invoice_creation.enabled === 'true', invoice_data: { metadata: b.invoice_creation.invoice_data?.metadata ?? {} } } : null,
          success_url: b.success_url ?? null,
          cancel_url: b.cancel_url ?? null,
          payment_status: 'unpaid',
          status: 'open',
          subscription: null,
          url: `${url}/pay/${id}`,
        }),
      ];
    }
    const expire = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(req.path);
    if (req.method === 'POST' && expire) {
      const id = decodeURIComponent(expire[1]);
      const invalid = validate('POST /v1/checkout/sessions/{session}/expire', req.body, { session: id });
      if (invalid) return invalid;
      const session = sessions.get(id);
      if (!session) return [404, missing('checkout.session', id, 'session')];
      if (session.status !== 'open') {
        return [400, stripeError({ type: 'invalid_request_error', message: 'Only Checkout Sessions with a status in ["open"] can be expired.' })];
      }
      Object.assign(session, { status: 'expired', url: null });
      return [200, session];
    }
    if (req.method === 'POST' && req.path === '/v1/billing_portal/sessions') {
      const invalid = validate('POST /v1/billing_portal/sessions', req.body);
      if (invalid) return invalid;
      const b = req.body as Record<string, any>;
      if (!b.customer) {
        return [400, stripeError({ type: 'invalid_request_error', code: 'parameter_missing', param: 'customer', message: 'Missing required param: customer.' })];
      }
      if (!customers.has(b.customer)) return [400, missing('customer', b.customer, 'customer')];
      const id = newId('bps_');
      return [
        200,
        {
          ...fixture('billing_portal.session'),
          id,
          created: nowSeconds(),
          customer: b.customer,
          livemode: false,
          return_url: b.return_url ?? null,
          url: `${url}/portal/${id}`,
        },
      ];
    }
    if (req.method === 'POST' && req.path === '/v1/customers') {
      const invalid = validate('POST /v1/customers', req.body);
      if (invalid) return invalid;
      const b = req.body as Record<string, any>;
      return [200, customers.get(addCustomer(undefined, { metadata: b.metadata ?? {}, name: b.name ?? null, email: b.email ?? null }))];
    }
    const customer = /^\/v1\/customers\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && customer) {
      const id = decodeURIComponent(customer[1]);
      const invalid = validate('GET /v1/customers/{customer}', req.query, { customer: id }) ?? unsupportedExpansion(req.query, []);
      if (invalid) return invalid;
      if (customers.has(id)) return [200, customers.get(id)];
      // The provider keeps answering a deleted customer, as a stub.
      if (deletedCustomers.has(id)) return [200, { id, object: 'customer', deleted: true }];
      return [404, missing('customer', id, 'id')];
    }
    const changed = changeRoutes(req) ?? invoiceRoute(req);
    if (changed) return changed;
    if (req.method === 'POST' && req.path === '/v1/billing/meter_events') {
      const invalid = validate('POST /v1/billing/meter_events', req.body);
      if (invalid) return invalid;
      return meterEvent(req.body as Record<string, any>);
    }
    return [404, stripeError({ type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${req.path}).` })];
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    const target = new URL(req.url ?? '/', 'http://fake');
    const recorded: RecordedRequest = {
      at: performance.now(),
      method: req.method ?? 'GET',
      path: target.pathname,
      query: parseForm(target.searchParams),
      body: parseForm(new URLSearchParams(raw)),
      headers: req.headers,
    };
    requests.push(recorded);
    // The provider takes one call at a time per customer and meter (its meter events' rate limit).
    const meterCall = recorded.method === 'POST' && recorded.path === '/v1/billing/meter_events'
      ? `${(recorded.body.payload as Record<string, unknown> | undefined)?.stripe_customer_id} ${recorded.body.event_name}` : undefined;
    const concurrentMeterCall = meterCall !== undefined && meterCallsInFlight.has(meterCall);
    if (meterCall !== undefined && !concurrentMeterCall) meterCallsInFlight.add(meterCall);
    try {
      await answer(req, res, raw, recorded, concurrentMeterCall);
    } finally {
      if (meterCall !== undefined && !concurrentMeterCall) meterCallsInFlight.delete(meterCall);
    }
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, raw: string, recorded: RecordedRequest, concurrentMeterCall: boolean) => {
    const inFlight = typeof req.headers['idempotency-key'] === 'string' && recorded.method === 'POST' ? req.headers['idempotency-key'] : undefined;
    if (inFlight !== undefined && keysInFlight.has(inFlight)) {
      // The provider is still carrying out the first request of this key (a client that timed out retries it).
      res.writeHead(409, { 'Content-Type': 'application/json', 'Request-Id': newId('req_'), 'Stripe-Should-Retry': 'true' });
      return void res.end(JSON.stringify(keyInUse(inFlight)));
    }
    const mark = {};
    if (inFlight !== undefined) keysInFlight.set(inFlight, mark);
    try {
      await carryOut(req, res, raw, recorded, concurrentMeterCall, () => free(inFlight, mark));
    } finally {
      free(inFlight, mark);
    }
  };

  const carryOut = async (req: IncomingMessage, res: ServerResponse, raw: string, recorded: RecordedRequest, concurrentMeterCall: boolean, kept: () => void) => {
    const holding = () =>
      holdPrefix !== undefined && recorded.path.startsWith(holdPrefix) && (holdOpts.method === undefined || holdOpts.method === recorded.method);
    if (holding() && !holdOpts.after) await new Promise<void>((resume) => heldRequests.push(resume));
    const failure = failures.shift() ?? [...pathFailures].find(([prefix]) => recorded.path.startsWith(prefix))?.[1];
    if (failure === 'reset') return void req.socket.destroy();
    if (failure === 'hang') return;
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'Request-Id': newId('req_') };
    const key = req.headers['idempotency-key'];
    const fingerprint = `${recorded.method} ${recorded.path} ${raw}`;
    const replay = typeof key === 'string' && recorded.method === 'POST' ? idempotent.get(key) : undefined;
    let status: number;
    let body: unknown;
    if (!failure && (concurrentMeterCall || overRate())) {
      rateLimited++;
      status = 429;
      body = stripeError({
        type: 'invalid_request_error',
        code: 'rate_limit',
        message: 'Request rate limit exceeded. You can learn more about rate limits here https://stripe.com/docs/rate-limits.',
      });
    } else if (failure) {
      status = failure.status;
      if (failure.retryAfter !== undefined) headers['Retry-After'] = String(failure.retryAfter);
      body = stripeError({ ...failure, type: failure.type ?? typeFor(failure.status), message: failure.message ?? 'Injected failure' });
    } else if (replay && replay.fingerprint !== fingerprint) {
      status = 400;
      body = stripeError({
        type: 'idempotency_error',
        message:
          'Keys for idempotent requests can only be used with the same parameters they were first used with. ' +
          `Try using a key other than '${key}' if you meant to execute a different request.`,
      });
    } else if (replay) {
      [status, body] = [replay.status, replay.body];
      headers['Idempotent-Replayed'] = 'true';
    } else {
      [status, body] = route(recorded);
      // The provider keeps the answer under the key once it executed the request (never a 5xx).
      if (typeof key === 'string' && recorded.method === 'POST' && status < 500) idempotent.set(key, { fingerprint, status, body });
    }
    kept();
    if (holding() && holdOpts.after) await new Promise<void>((resume) => heldRequests.push(resume));
    if (status >= 400) headers['Stripe-Should-Retry'] = String(status >= 500 || status === 429 || status === 409);
    res.writeHead(status, headers);
    res.end(JSON.stringify(body));
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    sessions,
    subscriptions,
    addCheckoutSession,
    addSubscription: (overrides) => {
      const subscription: Record<string, any> = { ...fixture('subscription'), livemode: false, metadata: {}, ...overrides };
      subscriptions.set(subscription.id, subscription);
      listings.clear();
      return subscription;
    },
    schedules,
    invoices,
    declineCards: (customerId) => void declining.add(customerId),
    withoutTaxLocation: (customerId) => void noTaxLocation.add(customerId),
    webhookTarget: (target) => void (webhookUrl = target),
    get queuedEvents() {
      return queuedEvents;
    },
    deliverEvents: async () => {
      if (!webhookUrl) throw new Error('deliverEvents: no webhookTarget');
      const sending = queuedEvents;
      queuedEvents = [];
      const statuses: number[] = [];
      for (const event of sending) {
        const body = JSON.stringify(event);
        const res = await fetch(`${webhookUrl}${WEBHOOK_PATH}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Payprovider-Signature': signatureHeader(body) },
          body,
        });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      return statuses;
    },
    events,
    meterEvents,
    addEvent: (event) => {
      events.push(event);
      listings.clear();
    },
    addCustomer,
    customers,
    deleteCustomer: (id) => {
      if (customers.delete(id)) deletedCustomers.add(id);
    },
    setDefaultPaymentMethod: (id, paymentMethod) => {
      const c = customers.get(id);
      if (!c) throw new Error(`setDefaultPaymentMethod: no customer ${id}`);
      c.invoice_settings = { ...c.invoice_settings, default_payment_method: paymentMethod };
    },
    addPrice,
    prices,
    rateLimit: (n) => {
      perSecond = n;
      recent = [];
    },
    get rateLimited() {
      return rateLimited;
    },
    failNext: (count, failure) => failures.push(...Array<Failure>(count).fill(failure)),
    failPath: (prefix, failure) => void (failure ? pathFailures.set(prefix, failure) : pathFailures.delete(prefix)),
    hold: (prefix, opts = {}) => {
      holdPrefix = prefix;
      holdOpts = opts;
    },
    held: () => heldRequests.length,
    release: () => {
      holdPrefix = undefined;
      const resume = heldRequests;
      heldRequests = [];
      resume.forEach((go) => go());
    },
    busiestSecond: () => {
      let busiest = 0;
      for (let first = 0, last = 0; last < requests.length; last++) {
        while (requests[last].at - requests[first].at >= 1000) first++;
        busiest = Math.max(busiest, last - first + 1);
      }
      return busiest;
    },
    reset: () => {
      requests.length = 0;
      failures = [];
      perSecond = undefined;
      rateLimited = 0;
      pathFailures.clear();
      sessions.clear();
      subscriptions.clear();
      idempotent.clear();
      events.length = 0;
      meterEvents.length = 0;
      listings.clear();
      schedules.clear();
      invoices.clear();
      pendingItems.clear();
      declining.clear();
      noTaxLocation.clear();
      queuedEvents = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const LIST_PARAMS = ['limit', 'starting_after', 'ending_before', 'expand'];

/**
 * What the provider refuses in a checkout session's mode: a recurring price in mode payment or a one-time price
 * in mode subscription, invoice creation outside mode payment (a subscription invoices by itself), and
 * subscription data outside mode subscription.
 */
function checkoutModeProblem(b: Record<string, any>, prices: (Record<string, any> | undefined)[]): { param: string; message: string; code?: string } | undefined {
  const mode = b.mode ?? 'payment';
  if (mode === 'payment') {
    if (prices.some((p) => p?.recurring)) {
      return { param: 'line_items', message: 'You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.' };
    }
    if (b.subscription_data !== undefined) return { param: 'subscription_data', message: 'You can only specify `subscription_data` in `subscription` mode.' };
    if (b.invoice_creation !== undefined && b.invoice_creation.enabled === undefined) {
      return { code: 'parameter_missing', param: 'invoice_creation[enabled]', message: 'Missing required param: invoice_creation[enabled].' };
    }
  }
  if (mode === 'subscription' && prices.length && prices.every((p) => p && !p.recurring)) {
    return { param: 'line_items', message: 'You must provide at least one recurring price in `subscription` mode when using prices.' };
  }
  if (mode !== 'payment' && b.invoice_creation !== undefined) {
    return { param: 'invoice_creation', message: 'You can only specify `invoice_creation` in `payment` mode.' };
  }
  return undefined;
}

/** A parameter the provider accepts that this double does not implement: refused, never silently ignored. */
export function unsupported(params: Record<string, unknown>, implemented: string[]): [number, unknown] | undefined {
  const name = Object.keys(params).find((p) => !implemented.includes(p));
  return name === undefined ? undefined : [400, stripeError({ type: 'invalid_request_error', param: name, message: `The test double does not implement ${name}` })];
}

/** The `expand[]` values of a request. */
function expansions(params: Record<string, unknown>): unknown[] {
  return params.expand === undefined ? [] : Array.isArray(params.expand) ? (params.expand as unknown[]) : [params.expand];
}

/** An `expand[]` this double does not carry out (`implemented`: those it does): refused, never silently ignored. */
function unsupportedExpansion(params: Record<string, unknown>, implemented: string[]): [number, unknown] | undefined {
  const other = expansions(params).find((e) => typeof e !== 'string' || !implemented.includes(e));
  return other === undefined ? undefined : [400, stripeError({ type: 'invalid_request_error', param: 'expand', message: `The test double does not implement expand[]=${String(other)}` })];
}

/** A price's amount in one currency, in the provider's shape of a `currency_options` entry (`tiers` only for a tiered price). */
function currencyOption(o: Record<string, any>) {
  const unitAmount = (o.unit_amount ?? null) as number | null;
  return {
    custom_unit_amount: o.custom_unit_amount ?? null,
    tax_behavior: o.tax_behavior ?? 'unspecified',
    ...(o.tiers ? { tiers: o.tiers } : {}),
    unit_amount: unitAmount,
    unit_amount_decimal: o.unit_amount_decimal ?? (unitAmount === null ? null : String(unitAmount)),
  };
}

/** The provider's list order: newest first, by `created`, then the later stored first. */
function newestFirst(objects: Record<string, any>[]): Record<string, any>[] {
  return objects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => b.o.created - a.o.created || b.i - a.i)
    .map(({ o }) => o);
}

/** One page of a list (in the provider's order), as the provider answers it: `limit` objects after `starting_after` or before `ending_before`. */
function listPage(listed: Record<string, any>[], req: RecordedRequest, resource: string): [number, unknown] {
  const q = req.query as { limit?: string; starting_after?: string; ending_before?: string };
  const limit = q.limit === undefined ? 10 : Number(q.limit);
  if (limit < 1 || limit > 100) {
    return [400, stripeError({ type: 'invalid_request_error', param: 'limit', message: 'Invalid limit: must be between 1 and 100' })];
  }
  if (q.starting_after !== undefined && q.ending_before !== undefined) {
    return [400, stripeError({ type: 'invalid_request_error', message: 'You may only specify one of these parameters: ending_before, starting_after.' })];
  }
  const cursor = q.starting_after ?? q.ending_before;
  const at = cursor === undefined ? -1 : listed.findIndex((o) => o.id === cursor);
  if (cursor !== undefined && at < 0) return [400, missing(resource, cursor, q.starting_after !== undefined ? 'starting_after' : 'ending_before')];
  const [from, to] = q.ending_before !== undefined ? [Math.max(0, at - limit), at] : [at + 1, at + 1 + limit];
  const hasMore = q.ending_before !== undefined ? from > 0 : to < listed.length;
  return [200, { object: 'list', data: listed.slice(from, to), has_more: hasMore, url: req.path }];
}

/**
 * Checks the ids in the path (`path`: each of the operation's path parameters, decoded) and the form parameters
 * against the operation's schema; answers the provider's 400 for the first offence.
 */
export function validate(operation: string, params: Record<string, unknown>, path: Record<string, string> = {}): [number, unknown] | undefined {
  const op = API.operations[operation];
  const problem = checkPath(operation, op.path ?? {}, path) ?? check(op.params, params, '');
  return problem && [400, stripeError({ type: 'invalid_request_error', ...problem })];
}

function checkPath(operation: string, schema: Record<string, Schema>, path: Record<string, string>): Problem | undefined {
  const declared = Object.keys(schema).sort().join();
  if (declared !== Object.keys(path).sort().join()) throw new Error(`fake provider: ${operation} takes the path parameters [${declared}], given [${Object.keys(path)}]`);
  for (const [name, rule] of Object.entries(schema)) {
    const problem = checkValue(rule, path[name], name);
    if (problem) return problem;
  }
  return undefined;
}

function check(schema: Record<string, Schema>, params: Record<string, unknown>, prefix: string): Problem | undefined {
  for (const [name, value] of Object.entries(params)) {
    const param = prefix ? `${prefix}[${name}]` : name;
    const rule = schema[name];
    if (rule === undefined) return { code: 'parameter_unknown', param, message: `Received unknown parameter: ${param}` };
    const problem = checkValue(rule, value, param);
    if (problem) return problem;
  }
  return undefined;
}

function checkValue(schema: Schema, value: unknown, param: string): Problem | undefined {
  if (schema === 'any') return undefined;
  const rule: Rule = typeof schema === 'string' ? { type: schema } : schema;
  const invalid = (message: string): Problem => ({ param, message });
  const isHash = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  switch (rule.type) {
    case 'string':
      if (typeof value !== 'string') return invalid(`Invalid string: ${param} must be a string.`);
      if (rule.maxLength !== undefined && value.length > rule.maxLength) {
        return { code: 'string_length', param, message: `Invalid string: must be at most ${rule.maxLength} characters` };
      }
      return undefined;
    case 'integer':
      return typeof value === 'string' && /^-?\d+$/.test(value) ? undefined : invalid(`Invalid integer: ${String(value)}`);
    case 'boolean':
      return value === 'true' || value === 'false' ? undefined : invalid(`Invalid boolean: ${String(value)}`);
    case 'enum':
      return typeof value === 'string' && rule.values!.includes(value) ? undefined : invalid(`Invalid ${param}: must be one of ${rule.values!.join(', ')}`);
    case 'metadata': {
      if (!isHash(value)) return invalid(`Invalid object: ${param} must be a hash.`);
      const entries = Object.entries(value);
      if (entries.length > 50) return invalid(`Invalid ${param}: at most 50 keys.`);
      for (const [k, v] of entries) {
        if (k.length > 40) return invalid(`Metadata keys can have up to 40 characters; "${k}" has ${k.length}.`);
        if (typeof v !== 'string' || v.length > 500) return invalid(`Metadata values can have up to 500 characters (${param}[${k}]).`);
      }
      return undefined;
    }
    case 'object':
      return isHash(value) ? check(rule.keys!, value, param) : invalid(`Invalid object: ${param} must be a hash.`);
    case 'array': {
      if (!Array.isArray(value)) return invalid(`Invalid array: ${param} must be an array.`);
      const items = rule.items!;
      const ofScalars = typeof items === 'string' || typeof (items as Rule).type === 'string';
      for (const [i, item] of value.entries()) {
        const at = `${param}[${i}]`;
        const problem = ofScalars
          ? checkValue(items as Schema, item, at)
          : isHash(item)
            ? check(items as Record<string, Schema>, item, at)
            : invalid(`Invalid object: ${at} must be a hash.`);
        if (problem) return problem;
      }
      return undefined;
    }
    default:
      throw new Error(`provider-api.json: unknown type ${rule.type}`);
  }
}

function fixture(name: string): Record<string, any> {
  return structuredClone((providerFixtures as Record<string, Record<string, any>>)[name]);
}

export function missing(resource: string, id: string, param: string) {
  return stripeError({ type: 'invalid_request_error', code: 'resource_missing', param, message: `No such ${resource}: '${id}'` });
}

export const FAKE_SECRET_KEY = 'sk_test_fake_provider_key';

/**
 * Env that points the app's real SDK at the fake, with a short per-attempt timeout for hang tests. A test that
 * counts the SDK's attempts gives a longer one: on a loaded machine an answered request can outlast 300 ms, and
 * the SDK then retries it.
 */
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

/** The provider's answer to a request whose idempotency key another request still being carried out holds. */
function keyInUse(key: string) {
  return stripeError({
    type: 'invalid_request_error',
    code: 'idempotency_key_in_use',
    message:
      'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, ' +
      `and the other request is still going through): ${key}. Please try again later.`,
  });
}

/** The provider's error object. */
export function stripeError(e: { type: string; code?: string; param?: string; message: string }) {
  return {
    error: {
      ...(e.code ? { code: e.code, doc_url: `https://docs.stripe.com/error-codes/${e.code.replace(/_/g, '-')}` } : {}),
      message: e.message,
      ...(e.param ? { param: e.param } : {}),
      request_log_url: `https://dashboard.stripe.com/test/logs/${newId('req_')}`,
      type: e.type,
    },
  };
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

export const newId = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;
export const nowSeconds = () => Math.floor(Date.now() / 1000);
