import { errorBody } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';
import { providerEvent } from './support/provider-events';

const KEY = 'svc-key-strict';

/*
 * Issue #33: what the API takes is exactly what it documents. Bodies are JSON only, names that the
 * validation step cannot see are refused like any unknown field, and integers in queries are plain digits.
 */
describe('strict input', () => {
  let t: TestApp;
  let orgId: string;
  let owner: Awaited<ReturnType<typeof createUserWithSession>>;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
    orgId = (await createOrganisation(t)).id;
    owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
  });
  afterAll(() => t.close());

  /** Rows of every table a body route writes: a refused request changes none of them. */
  const counts = async () =>
    (
      await t.db.query(`SELECT (SELECT count(*) FROM organisations)::int AS organisations, (SELECT count(*) FROM users)::int AS users,
                               (SELECT count(*) FROM memberships)::int AS memberships, (SELECT count(*) FROM sessions)::int AS sessions,
                               (SELECT count(*) FROM usage_counters)::int AS usage, (SELECT count(*) FROM sandbox_checkout_sessions)::int AS checkouts`)
    )[0];

  describe('bodies are JSON only', () => {
    it('a form-encoded checkout → 415 unsupported_media_type, no session opened (it was 201)', async () => {
      const before = await counts();
      const res = await t
        .http()
        .post('/api/billing/checkout')
        .set(owner.auth)
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send(`organisation_id=${orgId}&tier=pro`)
        .expect(415);
      expect(res.body).toEqual(errorBody(415, 'unsupported_media_type'));
      expect(await counts()).toEqual(before);
      // The same request as JSON is taken.
      await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);
    });

    it.each([
      ['text/plain', 'application/json lookalike'],
      ['application/x-www-form-urlencoded', 'form'],
      ['multipart/form-data; boundary=x', 'multipart'],
      ['application/xml', 'xml'],
    ])('%s on every route that takes a body → 415, nothing written', async (contentType) => {
      const before = await counts();
      const svc = { 'X-Service-Key': KEY };
      const json = (body: object) => JSON.stringify(body);
      const requests: [string, ReturnType<ReturnType<TestApp['http']>['post']>][] = [
        ['organisation', t.http().post('/api/admin/organisations').set(svc).set('Content-Type', contentType).send(json({ name: 'Form Ltd' }))],
        ['user', t.http().post('/api/admin/users').set(svc).set('Content-Type', contentType).send(json({ email: 'form@example.com' }))],
        ['member', t.http().put(`/api/admin/organisations/${orgId}/members/${owner.id}`).set(svc).set('Content-Type', contentType).send(json({ role: 'admin' }))],
        ['session', t.http().post('/api/admin/sessions').set(svc).set('Content-Type', contentType).send(json({ user_id: owner.id }))],
        ['usage', t.http().post('/api/licensing/usage').set(svc).set('Content-Type', contentType).send(json({ organisation_id: orgId, metric: 'projects', amount: 1 }))],
        ['checkout', t.http().post('/api/billing/checkout').set(owner.auth).set('Content-Type', contentType).send(json({ organisation_id: orgId, tier: 'pro' }))],
      ];
      for (const [route, request] of requests) {
        const res = await request;
        expect({ route, status: res.status, body: res.body }).toEqual({ route, status: 415, body: errorBody(415, 'unsupported_media_type') });
      }
      expect(await counts()).toEqual(before);
    });

    it('JSON with a charset is taken; requests without a body are not affected by their content type', async () => {
      await t
        .http()
        .post('/api/licensing/usage')
        .set('X-Service-Key', KEY)
        .set('Content-Type', 'application/json; charset=utf-8')
        .send(JSON.stringify({ organisation_id: orgId, metric: 'projects', amount: 1 }))
        .expect(200);
      await t.http().get('/api/me').set(owner.auth).set('Content-Type', 'text/plain').expect(200);
      const user = await createUserWithSession(t, { org: orgId });
      await t.http().delete(`/api/admin/organisations/${orgId}/members/${user.id}`).set('X-Service-Key', KEY).set('Content-Type', 'text/plain').expect(204);
      // An empty POST reaches validation, which names what is missing.
      const empty = await t.http().post('/api/admin/sessions/revoke').set('X-Service-Key', KEY).set('Content-Type', 'text/plain').send('');
      expect(empty.status).not.toBe(415);
    });

    it('the webhook keeps its own rule: signed JSON events are handled, other content is its invalid_event', async () => {
      const ok = await deliver(t.app.getHttpServer(), providerEvent('customer.created', { id: 'cus_strict', object: 'customer' })).expect(200);
      expect(ok.body.status).toBe('ignored');
      const text = await deliver(t.app.getHttpServer(), { body: '{}', contentType: 'text/plain' }).expect(400);
      expect(text.body.code).toBe('invalid_event');
    });
  });

  describe('__proto__, constructor and prototype are unknown fields like any other', () => {
    // Raw JSON: a `__proto__` key in an object literal would set the prototype instead of adding a field.
    const withField = (body: object, name: string, value = '{"isAdmin":true}') => `${JSON.stringify(body).slice(0, -1)},"${name}":${value}}`;
    const send = (method: 'post' | 'put', path: string, auth: Record<string, string>, raw: string) =>
      t.http()[method](path).set(auth).set('Content-Type', 'application/json').send(raw);

    it.each(['__proto__', 'constructor', 'prototype'])('%s → 400 validation_failed on every body route, nothing written', async (name) => {
      const svc = { 'X-Service-Key': KEY };
      const before = await counts();
      const cases: [string, ReturnType<typeof send>][] = [
        ['organisation', send('post', '/api/admin/organisations', svc, withField({ name: 'Proto Ltd' }, name))],
        ['user', send('post', '/api/admin/users', svc, withField({ email: 'proto@example.com' }, name))],
        ['member', send('put', `/api/admin/organisations/${orgId}/members/${owner.id}`, svc, withField({ role: 'admin' }, name))],
        ['session', send('post', '/api/admin/sessions', svc, withField({ user_id: owner.id }, name))],
        ['revoke', send('post', '/api/admin/sessions/revoke', svc, withField({ user_id: owner.id }, name))],
        ['usage', send('post', '/api/licensing/usage', svc, withField({ organisation_id: orgId, metric: 'projects', amount: 1 }, name))],
        ['checkout', send('post', '/api/billing/checkout', owner.auth, withField({ organisation_id: orgId, tier: 'pro' }, name, '"x"'))],
      ];
      for (const [route, request] of cases) {
        const res = await request;
        expect({ route, status: res.status, body: res.body }).toEqual({
          route,
          status: 400,
          body: { ...errorBody(400, 'validation_failed'), message: `property ${name} should not exist` },
        });
      }
      expect(await counts()).toEqual(before);
      // The session of the owner was not revoked.
      await t.http().get('/api/me').set(owner.auth).expect(200);
    });

    it('in a nested object and in a query too', async () => {
      const nested = `{"organisation_id":"${orgId}","tier":"pro","success_url":{"__proto__":{"x":1}}}`;
      expect((await send('post', '/api/billing/checkout', owner.auth, nested).expect(400)).body.code).toBe('validation_failed');
      for (const name of ['__proto__', 'constructor', 'prototype']) {
        const res = await t.http().get(`/api/billing/history?organisation_id=${orgId}&${name}=1`).set(owner.auth).expect(400);
        expect(res.body).toEqual({ ...errorBody(400, 'validation_failed'), message: `property ${name} should not exist` });
      }
    });
  });

  describe('integers in queries are plain decimal digits', () => {
    const NOT_PLAIN = ['1e2', '0x10', ' 5', '5 ', '+5', '5.0', '1_0', '', '0b11', 'Infinity', '５'];

    it.each([
      ['history limit', (v: string) => `/api/billing/history?organisation_id=${orgId}&limit=${encodeURIComponent(v)}`],
      ['check amount', (v: string) => `/api/licensing/check?organisation_id=${orgId}&metric=projects&amount=${encodeURIComponent(v)}`],
    ])('%s: anything but plain digits, or out of range → 400 validation_failed', async (_name, url) => {
      for (const value of [...NOT_PLAIN, '-1', '0']) {
        const res = await t.http().get(url(value)).set(owner.auth);
        expect({ value, status: res.status, code: res.body.code }).toEqual({ value, status: 400, code: 'validation_failed' });
      }
      // Repeated: an array, not an integer.
      expect((await t.http().get(`${url('5')}&${url('6').split('&').pop()}`).set(owner.auth)).status).toBe(400);
      for (const value of ['1', '5', '007', '100']) await t.http().get(url(value)).set(owner.auth).expect(200);
      expect((await t.http().get(url('101')).set(owner.auth)).status).toBe(url('101').includes('history') ? 400 : 200);
    });
  });
});
