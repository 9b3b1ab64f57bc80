import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { createClient, isServiceError, ServiceError } from '../src';
import { freePort } from '../../../test/support/free-port';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A real HTTP server standing where the service should be: a proxy, a gateway, the wrong app. */
async function standIn(handler: Handler): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function thrown(call: () => Promise<unknown>): Promise<ServiceError> {
  const err = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

const PROXY_PAGE = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>';

/** What a call throws when the answer is not the service's: every failure is a ServiceError with a code. */
describe('packages/client: failures that are not an answer of the service', () => {
  const servers: { close: () => Promise<void> }[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.close())));
  const serve = async (handler: Handler) => {
    const server = await standIn(handler);
    servers.push(server);
    return createClient({ baseUrl: server.baseUrl, session: 'a-session' });
  };

  it('an unreachable service (a closed port) throws network_error, with fetch\'s own error as its cause', async () => {
    const client = createClient({ baseUrl: `http://127.0.0.1:${await freePort()}` });
    const err = await thrown(() => client.plans());
    expect(err).toMatchObject({ name: 'ServiceError', code: 'network_error', status: 0, body: null, requestId: null, retryAfterS: null });
    expect(err.message).toMatch(/^no answer network_error: GET \/api\/billing\/plans: the service could not be reached \(ECONNREFUSED\)$/);
    // Node's own error (of another realm than Jest's, so compared by name): a web app can still log it.
    expect(err.cause).toMatchObject({ name: 'TypeError', message: 'fetch failed' });
    expect(isServiceError(err, 'network_error')).toBe(true);
  });

  it("a proxy's HTML 502 page throws bad_response with its status and the request id it carries", async () => {
    const client = await serve((req, res) => {
      res.writeHead(502, { 'Content-Type': 'text/html', 'X-Request-Id': 'req-behind-the-proxy' }).end(PROXY_PAGE);
    });
    const err = await thrown(() => client.me());
    expect(err).toMatchObject({ code: 'bad_response', status: 502, body: null, requestId: 'req-behind-the-proxy' });
    expect(err.message).toBe("502 bad_response: GET /api/me: the answer is text/html, not the service's JSON");
  });

  it('a page without a request id, a 2xx that is not JSON, JSON of another shape, or an empty answer: bad_response', async () => {
    const noId = await serve((req, res) => res.writeHead(503, { 'Content-Type': 'text/html' }).end(PROXY_PAGE));
    expect(await thrown(() => noId.status('2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11'))).toMatchObject({ code: 'bad_response', status: 503, requestId: null });

    // A base URL pointing at the web app itself, or a captive portal: 200 with a page.
    const page = await serve((req, res) => res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end('<!doctype html><p>Welcome</p>'));
    expect(await thrown(() => page.plans())).toMatchObject({ code: 'bad_response', status: 200 });

    // A gateway's own JSON error, without the service's code.
    const gateway = await serve((req, res) =>
      res.writeHead(504, { 'Content-Type': 'application/json', 'X-Request-Id': 'gw-1' }).end('{"message":"Endpoint request timed out"}'),
    );
    expect(await thrown(() => gateway.plans())).toMatchObject({ code: 'bad_response', status: 504, requestId: 'gw-1', body: null });

    const empty = await serve((req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end());
    expect((await thrown(() => empty.plans())).message).toMatch(/the answer is empty/);
  });

  it('a JSON body cut short by the connection throws network_error with the status and request id it started with', async () => {
    const client = await serve((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000', 'X-Request-Id': 'req-cut' });
      res.write('{"data":[{"tier":"free"');
      setImmediate(() => res.socket?.destroy());
    });
    const err = await thrown(() => client.plans());
    expect(err).toMatchObject({ code: 'network_error', status: 200, requestId: 'req-cut', body: null });
    expect(err.message).toMatch(/the connection broke during the answer/);
  });

  it("keeps the service's own errors as they were: its code, its body and Retry-After", async () => {
    const body = { statusCode: 429, error: 'Too Many Requests', message: 'Slow down.', code: 'rate_limited' };
    const client = await serve((req, res) =>
      res.writeHead(429, { 'Content-Type': 'application/json; charset=utf-8', 'X-Request-Id': 'req-429', 'Retry-After': '7' }).end(JSON.stringify(body)),
    );
    const err = await thrown(() => client.me());
    expect(err).toMatchObject({ code: 'rate_limited', status: 429, body, requestId: 'req-429', retryAfterS: 7, message: '429 rate_limited: Slow down.' });
    expect(isServiceError(err, 'rate_limited')).toBe(true);
  });
});
