import express from 'express';
import { generateKeyPair, SignJWT } from 'jose';
import { Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { createClient, GatedRequest, requireEntitlements, requireFeature } from '../src';
import { freePort } from '../../../test/support/free-port';
import { startTestApp, TestApp } from '../../../test/support/test-app';

const KEY = 'svc_gates_test_key';
const ISSUER = 'https://billing.example.test';

/**
 * The gates as a web app's own back end uses them: a real Express app, tokens signed by the real service,
 * verified offline against its JWKS (by URL, and as a key set kept beside them).
 */
describe('requireEntitlements / requireFeature (Express) against tokens the service signed', () => {
  let t: TestApp;
  let backEnd: ReturnType<typeof createClient>;
  let webApp: Server;
  let webAppUrl: string;
  let closedPort: number;

  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, PUBLIC_URL: ISSUER } });
    backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    closedPort = await freePort();
    const keySet = await createClient({ baseUrl: t.baseUrl }).jwks();
    const app = express();
    // The organisation a route acts on is in its path: another organisation's token is refused there.
    const gate = requireEntitlements({ jwks: `${t.baseUrl}/.well-known/jwks.json`, organisationId: (req) => req.params?.org });
    const report = (req: GatedRequest, res: express.Response) => res.json({ tier: req.entitlements?.tier, sso: req.entitlements?.features.sso });
    app.get('/orgs/:org/sso', gate, requireFeature('sso'), report);
    app.get('/orgs/:org/plan', gate, report);
    app.get('/no-org-in-path', gate, report);
    // A license file's set, read from a cookie instead of the header; and the issuer checked.
    const fromCookie = (req: GatedRequest) => /(?:^|; )license=([^;]+)/.exec(String(req.headers.cookie ?? ''))?.[1];
    app.get('/kept-keys/api', requireEntitlements({ jwks: keySet, token: fromCookie, issuer: ISSUER }), requireFeature('api_access'), report);
    app.get('/kept-keys/elsewhere', requireEntitlements({ jwks: keySet, token: fromCookie, issuer: 'https://elsewhere.example.test' }), report);
    app.get('/unreachable-keys', requireEntitlements({ jwks: `http://127.0.0.1:${closedPort}/.well-known/jwks.json` }), report);
    // A route that forgot requireEntitlements: closed, never open.
    app.get('/miswired', requireFeature('sso'), report);
    webApp = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => webApp.once('listening', resolve));
    webAppUrl = `http://127.0.0.1:${(webApp.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    jest.useRealTimers();
    await new Promise((resolve) => webApp?.close(resolve));
    await t?.close();
  });

  async function organisation(name: string) {
    return backEnd.admin.createOrganisation({ name, external_id: name });
  }
  async function call(path: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${webAppUrl}${path}`, { headers });
    return { status: res.status, body: await res.json() };
  }

  it('lets a token with the feature through, with the typed entitlements on req.entitlements', async () => {
    const org = await organisation('gates_sso');
    await backEnd.admin.overrides.set(org.id, 'sso', { value: true });
    const { token } = await backEnd.entitlementToken(org.id);
    expect(await call(`/orgs/${org.id}/sso`, { 'X-Entitlements-Token': token })).toEqual({ status: 200, body: { tier: 'free', sso: true } });
  });

  it('refuses 402 feature_not_in_plan when the verified plan lacks the feature, in the service\'s error shape', async () => {
    const org = await organisation('gates_free');
    const { token } = await backEnd.entitlementToken(org.id);
    expect(await call(`/orgs/${org.id}/sso`, { 'X-Entitlements-Token': token })).toEqual({
      status: 402,
      body: { statusCode: 402, error: 'Payment Required', code: 'feature_not_in_plan', message: "The organisation's plan does not include sso." },
    });
    // Without a feature to check, the same token passes requireEntitlements alone.
    expect(await call(`/orgs/${org.id}/plan`, { 'X-Entitlements-Token': token })).toEqual({ status: 200, body: { tier: 'free', sso: false } });
  });

  it("refuses 403 another organisation's token, even one with the feature", async () => {
    const rich = await organisation('gates_rich');
    const poor = await organisation('gates_poor');
    await backEnd.admin.overrides.set(rich.id, 'sso', { value: true });
    const { token } = await backEnd.entitlementToken(rich.id);
    const refused = await call(`/orgs/${poor.id}/sso`, { 'X-Entitlements-Token': token });
    expect(refused).toMatchObject({ status: 403, body: { statusCode: 403, code: 'entitlements_wrong_organisation' } });
    // A route whose request names no organisation cannot be checked: closed too.
    expect(await call('/no-org-in-path', { 'X-Entitlements-Token': token })).toMatchObject({ status: 403, body: { code: 'entitlements_wrong_organisation' } });
  });

  it('refuses 401 without a token, and with one that is altered, expired or signed by another key', async () => {
    const org = await organisation('gates_bad');
    await backEnd.admin.overrides.set(org.id, 'sso', { value: true });
    const { token } = await backEnd.entitlementToken(org.id, 60);
    const path = `/orgs/${org.id}/sso`;
    expect(await call(path)).toMatchObject({ status: 401, body: { statusCode: 401, error: 'Unauthorized', code: 'entitlements_token_missing' } });
    expect(await call(path, { 'X-Entitlements-Token': 'not.a.token' })).toMatchObject({ status: 401, body: { code: 'entitlements_token_invalid' } });

    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const altered = Buffer.from(JSON.stringify({ ...claims, features: { ...claims.features, audit_log: true } })).toString('base64url');
    expect(await call(path, { 'X-Entitlements-Token': `${header}.${altered}.${signature}` })).toMatchObject({
      status: 401,
      body: { code: 'entitlements_token_invalid', message: expect.stringMatching(/signature/) },
    });

    // The same claims and kid, signed by a key the service never published.
    const { kid, alg } = JSON.parse(Buffer.from(header, 'base64url').toString());
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    const impostor = await new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(privateKey);
    expect(await call(path, { 'X-Entitlements-Token': impostor })).toMatchObject({ status: 401, body: { code: 'entitlements_token_invalid' } });

    // Past its exp (60 s): only Date moves, the sockets' timers stay real.
    jest.useFakeTimers({ now: (claims.exp + 1) * 1000, doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'] });
    try {
      expect(await call(path, { 'X-Entitlements-Token': token })).toMatchObject({
        status: 401,
        body: { code: 'entitlements_token_invalid', message: expect.stringMatching(/exp/) },
      });
    } finally {
      jest.useRealTimers();
    }
    expect((await call(path, { 'X-Entitlements-Token': token })).status).toBe(200);
  });

  it('verifies against a key set kept beside the token, a token from where the app says, and the issuer', async () => {
    const org = await organisation('gates_kept');
    await backEnd.admin.overrides.set(org.id, 'api_access', { value: true });
    const { token } = await backEnd.entitlementToken(org.id);
    expect(await call('/kept-keys/api', { Cookie: `theme=dark; license=${token}` })).toEqual({ status: 200, body: { tier: 'free', sso: false } });
    expect(await call('/kept-keys/api', { 'X-Entitlements-Token': token })).toMatchObject({ status: 401, body: { code: 'entitlements_token_missing' } });
    expect(await call('/kept-keys/elsewhere', { Cookie: `license=${token}` })).toMatchObject({
      status: 401,
      body: { code: 'entitlements_token_invalid', message: expect.stringMatching(/iss/) },
    });
  });

  it('answers 503 when the keys cannot be fetched (not 401: the token may be fine), and 500 on a route without requireEntitlements', async () => {
    const org = await organisation('gates_keys');
    const { token } = await backEnd.entitlementToken(org.id);
    expect(await call('/unreachable-keys', { 'X-Entitlements-Token': token })).toMatchObject({
      status: 503,
      body: { statusCode: 503, error: 'Service Unavailable', code: 'entitlements_keys_unavailable' },
    });
    const res = await fetch(`${webAppUrl}/miswired`, { headers: { 'X-Entitlements-Token': token } });
    expect(res.status).toBe(500);
  });
});
