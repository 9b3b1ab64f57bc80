import express from 'express';
import request from 'supertest';
import { httpRequestDuration, registry } from '../src/common/metrics';
import { requestMetrics } from '../src/ops/request-metrics';
import { createUserWithSession, startTestApp, TestApp } from './support/test-app';

const APP_URL = 'https://app.example.com';
const METRICS_TOKEN = 'metrics-token-for-tests';

/** The value of one sample line of the Prometheus text output, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.slice(name.length).split('}')[0];
    if (wanted.every((l) => labelText.includes(l))) return Number(line.split(' ').pop());
  }
  return undefined;
}

const expectErrorShape = (body: unknown, statusCode: number, code: string) =>
  expect(body).toEqual({ statusCode, error: expect.any(String), message: expect.any(String), code });

describe('operations over HTTP', () => {
  let t: TestApp;
  /** A second instance on the same database, without a metrics token. */
  let open: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { APP_URL, METRICS_TOKEN } });
    open = await startTestApp({ databaseUrl: t.databaseUrl });
  });
  // Both at the end, the second instance first.
  afterAll(async () => {
    await open.close();
    await t.close();
  });

  describe('GET /metrics', () => {
    const scrape = () => t.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);

    it('needs the metrics token when one is configured: 401 in the error shape without it or with a wrong one', async () => {
      expectErrorShape((await t.http().get('/metrics').expect(401)).body, 401, 'metrics_token_required');
      const wrong = await t.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}x`).expect(401);
      expectErrorShape(wrong.body, 401, 'metrics_token_required');
      await t.http().get('/metrics').set('Authorization', `Basic ${METRICS_TOKEN}`).expect(401);
      // A session is not a metrics token.
      const user = await createUserWithSession(t);
      await t.http().get('/metrics').set(user.auth).expect(401);
      const ok = await scrape().expect(200);
      expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    });

    it('is open when no token is configured', async () => {
      const res = await open.http().get('/metrics').expect(200);
      expect(res.text).toContain('http_request_duration_seconds');
    });

    it('labels request durations by route pattern and status, not by raw URL', async () => {
      const before = await scrape().expect(200);
      const count = (text: string, route: string, status: string) =>
        sample(text, 'http_request_duration_seconds_count', { method: 'GET', route, status }) ?? 0;

      await t.http().get('/api/health?probe=a').expect(200);
      await t.http().get('/api/health?probe=b').expect(200);
      await t.http().get('/api/me').expect(401);
      await t.http().get('/api/no-such-route/123').expect(404);

      const after = (await scrape().expect(200)).text;
      expect(count(after, '/api/health', '200') - count(before.text, '/api/health', '200')).toBe(2);
      expect(count(after, '/api/me', '401') - count(before.text, '/api/me', '401')).toBe(1);
      expect(count(after, 'unmatched', '404') - count(before.text, 'unmatched', '404')).toBe(1);
      expect(after).not.toMatch(/probe=|no-such-route/);
    });

    it('exposes the pool, webhook, provider and process metrics', async () => {
      const text = (await scrape().expect(200)).text;
      expect(sample(text, 'database_pool_connections', {})).toBeGreaterThan(0);
      expect(sample(text, 'database_pool_idle_connections', {})).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'database_pool_waiting_clients', {})).toBe(0);
      expect(text).toContain('# TYPE webhook_events_total counter');
      expect(text).toContain('# TYPE payment_provider_call_duration_seconds histogram');
      expect(sample(text, 'process_resident_memory_bytes', {})).toBeGreaterThan(0);
      expect(sample(text, 'nodejs_eventloop_lag_seconds', {})).toBeGreaterThanOrEqual(0);
    });
  });

  it('labels a parameterised route by its pattern', async () => {
    // A bare Express app with the same middleware: the label must not depend on any route of ours.
    const app = express();
    app.use(requestMetrics);
    app.get('/things/:id', (_req, res) => void res.status(204).end());
    const before = (await httpRequestDuration.get()).values.filter((v) => v.labels.route === '/things/:id').length;
    await request(app).get('/things/1').expect(204);
    await request(app).get('/things/2?x=y').expect(204);
    const values = (await httpRequestDuration.get()).values.filter((v) => v.labels.route === '/things/:id');
    expect(before).toBe(0);
    expect(values.find((v) => v.metricName === 'http_request_duration_seconds_count')?.value).toBe(2);
    expect(await registry.metrics()).not.toMatch(/\/things\/[12]/);
  });

  describe('security headers', () => {
    it('sets the security headers (helmet 8 set) on API responses, with a CSP that allows no script', async () => {
      const res = await t.http().get('/api/health').expect(200);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['content-security-policy']).not.toContain('script-src');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-powered-by']).toBeUndefined();
      // Errors carry them too.
      const notFound = await t.http().get('/api/nope').expect(404);
      expect(notFound.headers['content-security-policy']).toContain("default-src 'none'");
    });

    it('lets the Swagger UI load its own scripts and styles, and nothing from elsewhere', async () => {
      const res = await t.http().get('/api/docs').expect(200);
      const csp = res.headers['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self' 'unsafe-inline'");
      expect(csp).not.toContain("'unsafe-eval'");
      expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
      // Every script the page loads is its own, under /api/docs.
      const scripts = [...res.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
      expect(scripts.length).toBeGreaterThan(0);
      for (const src of scripts) await t.http().get(`/api/docs/${src.replace(/^\.?\/?(docs\/)?/, '')}`).expect(200);
    });
  });

  describe('CORS', () => {
    const preflight = (origin: string) =>
      t
        .http()
        .options('/api/me')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization,x-request-id,content-type');

    it('allows the web app origin with credentials and the headers it needs', async () => {
      const res = await preflight(APP_URL).expect(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP_URL);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      const allowed = res.headers['access-control-allow-headers'].toLowerCase().split(',');
      expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-request-id', 'x-service-key']));
      expect(res.headers.vary).toMatch(/Origin/);

      const user = await createUserWithSession(t);
      const actual = await t.http().get('/api/me').set('Origin', APP_URL).set(user.auth).expect(200);
      expect(actual.headers['access-control-allow-origin']).toBe(APP_URL);
      expect(actual.headers['access-control-expose-headers']).toBe('X-Request-Id');
    });

    it('does not allow any other origin', async () => {
      for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'http://app.example.com']) {
        const res = await preflight(origin);
        // (Access-Control-Allow-Credentials may still be sent: without an allowed origin it grants nothing.)
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
      }
      const actual = await t.http().get('/api/health').set('Origin', 'https://evil.example.com').expect(200);
      expect(actual.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('cross-origin request protection (cookie sessions)', () => {
    it('refuses a state-changing request a browser sends from another site, even with a valid session cookie', async () => {
      const user = await createUserWithSession(t);
      const res = await t
        .http()
        .post('/api/billing/checkout')
        .set('Cookie', `session=${user.token}`)
        .set('Origin', 'https://evil.example.com')
        .set('Sec-Fetch-Site', 'cross-site')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send('tier=pro')
        .expect(403);
      expectErrorShape(res.body, 403, 'forbidden');
      // Also without Sec-Fetch-Site (older browsers), by Origin against Host.
      await t.http().post('/api/billing/checkout').set('Origin', 'https://evil.example.com').send({}).expect(403);
    });

    it('lets the web app origin, same-origin pages and non-browser clients through to the session guard', async () => {
      await t.http().post('/api/billing/checkout').set('Origin', APP_URL).set('Sec-Fetch-Site', 'same-site').send({}).expect(401);
      await t.http().post('/api/billing/checkout').set('Sec-Fetch-Site', 'same-origin').send({}).expect(401);
      await t.http().post('/api/billing/checkout').send({}).expect(401);
      // Safe methods are never refused.
      await t.http().get('/api/health').set('Origin', 'https://evil.example.com').set('Sec-Fetch-Site', 'cross-site').expect(200);
    });
  });
});
