import { connect, Socket } from 'node:net';
import { errorBody } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { signatureHeader } from './support/webhook-signing';

const KEY = 'svc-key-limits';

/** `depth` nested JSON arrays around `inner`: depth 1 is `[inner]`. */
const nested = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** The server closed the connection after answering. */
  closed: boolean;
}

/** Writes raw bytes (all at once, or what `drip` sends) and reads what comes back until the server closes. */
function raw(port: number, request: string, opts: { endAfterMs?: number } = {}): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    const giveUp = setTimeout(() => socket.destroy(new Error(`no close within ${opts.endAfterMs ?? 10_000} ms: ${received}`)), opts.endAfterMs ?? 10_000);
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(giveUp);
      const [head, ...rest] = received.split('\r\n\r\n');
      const [statusLine, ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const text = rest.join('\r\n\r\n');
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: text ? JSON.parse(text) : undefined, closed: true });
    });
    socket.write(request);
  });
}

describe('input limits and the HTTP server', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, REQUEST_TIMEOUT_S: '2' } });
    port = Number(new URL(t.baseUrl).port);
  });
  afterAll(async () => {
    await t.close();
  });

  const usage = (body: string) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).set('Content-Type', 'application/json').send(body);

  describe('JSON nesting', () => {
    it('~1500 levels deep → 400 json_too_deep, before authentication and validation (was 500)', async () => {
      const unauthenticated = await t.http().post('/api/licensing/usage').set('Content-Type', 'application/json').send(nested(1500));
      expect(unauthenticated.status).toBe(400);
      expect(unauthenticated.body).toEqual(errorBody(400, 'json_too_deep'));
      const inAField = `{"organisation_id":${nested(1500, '"x"')},"metric":"projects","amount":1}`;
      expect((await usage(inAField)).body).toEqual(errorBody(400, 'json_too_deep'));
      // A megabyte of brackets is refused just the same.
      expect((await usage(nested(400_000))).body).toEqual(errorBody(400, 'json_too_deep'));
    });

    it('64 levels are accepted as JSON (and then validated); 65 are not', async () => {
      const at = (depth: number) => `{"organisation_id":"x","metric":"projects","amount":1,"extra":${nested(depth - 1)}}`;
      expect((await usage(at(64))).body).toEqual(errorBody(400, 'validation_failed'));
      expect((await usage(at(65))).body).toEqual(errorBody(400, 'json_too_deep'));
    });

    it('the webhook route never refuses a correctly signed event for its nesting', async () => {
      const body = JSON.stringify({
        id: 'evt_deeply_nested',
        object: 'event',
        type: 'customer.created',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        data: { object: { id: 'cus_deep', object: 'customer', metadata: {} } },
      }).replace('"metadata":{}', `"metadata":{"deep":${nested(200)}}`);
      const res = await t
        .http()
        .post('/api/webhooks/payprovider')
        .set('Content-Type', 'application/json')
        .set('Payprovider-Signature', signatureHeader(body))
        .send(body);
      expect(res.body.code).not.toBe('json_too_deep');
      expect(res.status).toBe(200);
    });
  });

  describe('NUL characters', () => {
    it('in a query value (the history cursor) → 400 nul_character (was 500)', async () => {
      const org = (await createOrganisation(t)).id;
      const user = await createUserWithSession(t, { org });
      const res = await t.http().get(`/api/billing/history?organisation_id=${org}&starting_after=in_%00x`).set(user.auth);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorBody(400, 'nul_character'));
      expect(res.headers['x-request-id']).toBeTruthy();
      // Without it, the same request is fine (400 for a cursor that is not an invoice of this history).
      const clean = await t.http().get(`/api/billing/history?organisation_id=${org}&starting_after=in_x`).set(user.auth);
      expect(clean.body.code).toBe('invalid_cursor');
    });

    it('in a path segment or a JSON string → 400 nul_character', async () => {
      expect((await t.http().get('/sandbox/checkout/cs_%00')).body).toEqual(errorBody(400, 'nul_character'));
      const body = JSON.stringify({ organisation_id: 'x', metric: 'projects', amount: 1, idempotency_key: 'job\u0000' });
      expect((await usage(body)).body).toEqual(errorBody(400, 'nul_character'));
    });
  });

  describe('__proto__ and constructor keys', () => {
    it('are refused like any unknown field (issue #33) and never reach an object prototype', async () => {
      const org = (await createOrganisation(t)).id;
      const body = `{"organisation_id":"${org}","metric":"projects","amount":1,
        "__proto__":{"polluted":true,"amount":1000},"constructor":{"prototype":{"polluted":true}}}`;
      const res = await usage(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      const query = await t.http().get(`/api/licensing/check?organisation_id=${org}&metric=projects&__proto__=1&constructor=2`).set('X-Service-Key', KEY);
      expect(query.status).toBe(400);
      expect(await t.db.query('SELECT 1 FROM usage_counters WHERE organisation_id = $1', [org])).toEqual([]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
      expect(Object.prototype).not.toHaveProperty('amount');
    });
  });

  describe('what Node answers before Express: the same JSON shape', () => {
    it('headers over 16 KiB → 431 with the error body and X-Request-Id, connection closed', async () => {
      const reply = await raw(port, `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
      expect(reply.status).toBe(431);
      expect(reply.body).toEqual(errorBody(431, 'headers_too_large'));
      expect(reply.headers['content-type']).toMatch(/^application\/json/);
      expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(reply.closed).toBe(true);
    });

    it('a malformed request → 400 bad_request in the shape', async () => {
      const reply = await raw(port, 'GET /api/health HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n');
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual(errorBody(400, 'bad_request'));
    });

    it('a request slower than REQUEST_TIMEOUT_S → 408 request_timeout, socket closed (headers or body)', async () => {
      const [headers, body] = await Promise.all([
        raw(port, 'GET /api/health HTTP/1.1\r\nHost: x\r\n'),
        raw(port, `POST /api/licensing/usage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`),
      ]);
      expect(headers.status).toBe(408);
      expect(headers.body).toEqual(errorBody(408, 'request_timeout'));
      expect(body.status).toBe(408);
      expect(body.body).toEqual(errorBody(408, 'request_timeout'));
    });

    it('sets the server timeouts on purpose', () => {
      const server = t.app.getHttpServer();
      expect(server.requestTimeout).toBe(2000);
      expect(server.headersTimeout).toBe(2000);
      expect(server.keepAliveTimeout).toBe(65_000);
    });
  });
});
