import Stripe from 'stripe';
import request from 'supertest';
import { createOrganisation, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { providerEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { deliver, sign, signatureHeader, WEBHOOK_PATH } from './support/webhook-signing';

const OLD_SECRET = 'whsec_old_rotated_secret';

describe('POST /api/webhooks/payprovider: signature verification', () => {
  let t: TestApp;
  let orgId: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { PAYPROVIDER_WEBHOOK_SECRET: `${TEST_WEBHOOK_SECRET},${OLD_SECRET}` } });
    orgId = (await createOrganisation(t)).id;
  });
  afterAll(() => t.close());

  const now = () => Math.floor(Date.now() / 1000);
  const eventBody = () => JSON.stringify(subscriptionEvent('created', subscriptionObject({ organisationId: orgId })));
  const counts = async () => {
    const [row] = await t.db.query(
      `SELECT (SELECT count(*) FROM webhook_events)::int AS events, (SELECT count(*) FROM provider_subscriptions)::int AS subscriptions`,
    );
    return row;
  };

  it('accepts a correctly signed event (the stripe SDK header too) and stores it', async () => {
    const body = eventBody();
    const header = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: TEST_WEBHOOK_SECRET });
    const res = await deliver(t.app.getHttpServer(), { body, header }).expect(200);
    expect(res.body).toEqual({ id: JSON.parse(body).id, status: 'processed', reason: null });
  });

  describe('Stripe-Signature: the name the real provider sends the signature under (spec §6)', () => {
    const post = (b: string, headers: Record<string, string>) => {
      const req = request(t.app.getHttpServer()).post(WEBHOOK_PATH).set('Content-Type', 'application/json');
      for (const [name, value] of Object.entries(headers)) req.set(name, value);
      return req.send(b);
    };
    const stripeHeader = (b: string, secret = TEST_WEBHOOK_SECRET) => Stripe.webhooks.generateTestHeaderString({ payload: b, secret });

    it("an event signed by the provider's own SDK under Stripe-Signature is verified and applied", async () => {
      const b = eventBody();
      const res = await post(b, { 'Stripe-Signature': stripeHeader(b) }).expect(200);
      expect(res.body).toMatchObject({ id: JSON.parse(b).id, status: 'processed' });
    });

    it.each<[string, (b: string) => string, string]>([
      ['another secret', (b) => stripeHeader(b, 'whsec_wrong'), 'signature_invalid'],
      ['a malformed value', () => 'nonsense', 'signature_malformed'],
      ['a stale timestamp', (b) => signatureHeader(b, { timestamp: now() - 301 }), 'signature_timestamp_out_of_tolerance'],
    ])('Stripe-Signature with %s → 400 and nothing stored, as the other name', async (_name, header, code) => {
      const before = await counts();
      const b = eventBody();
      expect((await post(b, { 'Stripe-Signature': header(b) }).expect(400)).body.code).toBe(code);
      expect(await counts()).toEqual(before);
    });

    it('with both headers, Payprovider-Signature alone decides', async () => {
      const good = eventBody();
      await post(good, { 'Payprovider-Signature': signatureHeader(good), 'Stripe-Signature': 'nonsense' }).expect(200);
      const before = await counts();
      const bad = eventBody();
      const res = await post(bad, { 'Payprovider-Signature': signatureHeader(bad, { secret: 'whsec_wrong' }), 'Stripe-Signature': stripeHeader(bad) }).expect(400);
      expect(res.body.code).toBe('signature_invalid');
      expect(await counts()).toEqual(before);
    });
  });

  it('accepts a signature made with an older secret still configured (rotation)', async () => {
    const body = eventBody();
    await deliver(t.app.getHttpServer(), { body, secret: OLD_SECRET }).expect(200);
  });

  const body = eventBody();
  const ts = now();
  const v1 = sign(body, ts);
  it.each<[string, () => { body: string; header?: string | null; contentType?: string }, string]>([
    ['no header', () => ({ body, header: null }), 'signature_missing'],
    ['empty header', () => ({ body, header: '' }), 'signature_missing'],
    ['bad format', () => ({ body, header: 'this is not a signature' }), 'signature_malformed'],
    ['no v1 (only v0)', () => ({ body, header: `t=${ts},v0=${v1}` }), 'signature_malformed'],
    ['no timestamp', () => ({ body, header: `v1=${v1}` }), 'signature_malformed'],
    ['repeated t=', () => ({ body, header: `t=${ts},t=${ts},v1=${v1}` }), 'signature_malformed'],
    ['whitespace in the header', () => ({ body, header: `t=${ts}, v1=${v1}` }), 'signature_malformed'],
    ['wrong secret', () => ({ body, header: signatureHeader(body, { secret: 'whsec_wrong' }) }), 'signature_invalid'],
    ['stale timestamp', () => ({ body, header: signatureHeader(body, { timestamp: now() - 301 }) }), 'signature_timestamp_out_of_tolerance'],
    ['future timestamp', () => ({ body, header: signatureHeader(body, { timestamp: now() + 301 }) }), 'signature_timestamp_out_of_tolerance'],
    ['a body changed by one byte', () => ({ body: body.replace('"active"', '"activf"'), header: `t=${ts},v1=${v1}` }), 'signature_invalid'],
    ['re-serialised JSON with the same meaning', () => ({ body: JSON.stringify(JSON.parse(body), null, 2), header: `t=${ts},v1=${v1}` }), 'signature_invalid'],
    ['signature of another timestamp', () => ({ body, header: `t=${ts + 1},v1=${v1}` }), 'signature_invalid'],
    ['not JSON content', () => ({ body, contentType: 'text/plain' }), 'invalid_event'],
  ])('%s → 400 and nothing stored', async (_name, make, code) => {
    const before = await counts();
    const res = await deliver(t.app.getHttpServer(), make()).expect(400);
    expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.any(String), code });
    expect(await counts()).toEqual(before);
  });

  it('accepts several signatures when one matches', async () => {
    const b = eventBody();
    const t0 = now();
    const header = `t=${t0},v1=${sign(b, t0, 'whsec_other')},v1=${sign(b, t0)},v0=${'0'.repeat(64)}`;
    await deliver(t.app.getHttpServer(), { body: b, header }).expect(200);
  });

  it.each<[string, string]>([
    ['a body that is not JSON', 'not json at all'],
    ['an event without id', JSON.stringify({ type: 'x.y', created: 1, data: { object: {} } })],
    ['an event without type', JSON.stringify({ id: 'evt_1', created: 1, data: { object: {} } })],
    ['an event without data.object', JSON.stringify({ id: 'evt_1', type: 'x.y', created: 1, data: {} })],
    ['a JSON array', '[1,2]'],
  ])('a correctly signed %s → 400 and nothing stored', async (_name, raw) => {
    const before = await counts();
    const res = await deliver(t.app.getHttpServer(), { body: raw }).expect(400);
    expect(res.body.code).toMatch(/^(invalid_event|invalid_json)$/);
    expect(await counts()).toEqual(before);
  });

  it('a correctly signed event without created is stored failed, not refused (the provider would retry it for days)', async () => {
    const raw = JSON.stringify({ id: 'evt_no_created', type: 'customer.subscription.updated', data: { object: { id: 'sub_x' } } });
    const res = await deliver(t.app.getHttpServer(), { body: raw }).expect(200);
    expect(res.body).toEqual({ id: 'evt_no_created', status: 'failed', reason: 'invalid_event: the event has no valid created' });
  });

  it('an unsigned malformed body is refused too, and the route needs no session', async () => {
    await deliver(t.app.getHttpServer(), { body: '{oops', header: null }).expect(400);
    const ok = providerEvent('customer.created', { id: 'cus_1', object: 'customer' });
    const res = await deliver(t.app.getHttpServer(), ok).expect(200);
    expect(res.body.status).toBe('ignored');
  });
});
