import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProvider, fakeProviderEnv, startFakeProvider, validate } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

function tiersFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'checkout-plans-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
  return file;
}

/** Checkout with interval, seats, trial, promotion codes and automatic tax (spec §11.3), against the strict double. */
describe('POST /api/billing/checkout: plans, seats and trials', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const start = async (env: Record<string, string> = {}) => {
    fake = await startFakeProvider();
    fake.addPrice('price_pro_m');
    fake.addPrice('price_pro_y', { recurring: { ...fake.prices.get('price_pro_m')!.recurring, interval: 'year' } });
    fake.addPrice('price_team_m');
    t = await startTestApp({
      env: {
        ...fakeProviderEnv(fake, 10_000),
        TIERS_FILE: tiersFile(),
        PAYPROVIDER_PRICE_PRO: 'price_pro_m,price_pro_y',
        PAYPROVIDER_PRICE_TEAM: 'price_team_m',
        ...env,
      },
    });
  };
  const stop = async () => {
    await t.close();
    await fake.close();
  };
  const org = async (members = 1) => {
    const id = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: id, role: 'owner' });
    for (let i = 1; i < members; i++) await createUserWithSession(t, { org: id });
    return { id, owner };
  };
  const post = (o: { id: string; owner: { auth: Record<string, string> } }, body: Record<string, unknown>) =>
    t.http().post('/api/billing/checkout').set(o.owner.auth).send({ organisation_id: o.id, ...body });
  const sent = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions').map((r) => r.body);

  describe('defaults (a trial needs a card, no promotion codes, no automatic tax)', () => {
    beforeAll(() => start());
    afterAll(stop);
    beforeEach(() => fake.reset());

    it("interval picks the tier's price with it; without one, the first listed; the trial of a new organisation", async () => {
      const a = await org();
      const res = await post(a, { tier: 'pro', interval: 'year' }).expect(201);
      expect(res.body).toEqual({ session_id: expect.any(String), url: expect.any(String), trial_days: 14 });
      const [body] = sent();
      expect(body.line_items).toEqual([{ price: 'price_pro_y', quantity: '1' }]);
      expect(body.subscription_data).toEqual({ metadata: { organisation_id: a.id, tier: 'pro' }, trial_period_days: '14' });
      expect(body.payment_method_collection).toBeUndefined();
      expect(body.allow_promotion_codes).toBeUndefined();
      expect(body.automatic_tax).toBeUndefined();

      const b = await org();
      await post(b, { tier: 'pro' }).expect(201);
      expect(sent()[1].line_items).toEqual([{ price: 'price_pro_m', quantity: '1' }]);
    });

    it('seats of a per-seat tier are the line item quantity; default the member count', async () => {
      const a = await org(3);
      const res = await post(a, { tier: 'team' }).expect(201);
      expect(res.body.trial_days).toBe(0);
      expect(sent()[0].line_items).toEqual([{ price: 'price_team_m', quantity: '3' }]);
      fake.reset();
      const b = await org(2);
      await post(b, { tier: 'team', seats: 7 }).expect(201);
      expect(sent()[0].line_items).toEqual([{ price: 'price_team_m', quantity: '7' }]);
    });

    it('the same organisation asking for other seats gets a new session; the same seats get the open one back', async () => {
      const a = await org(2);
      const first = await post(a, { tier: 'team', seats: 4 }).expect(201);
      const again = await post(a, { tier: 'team', seats: 4 }).expect(200);
      expect(again.body.session_id).toBe(first.body.session_id);
      const other = await post(a, { tier: 'team', seats: 5 }).expect(201);
      expect(other.body.session_id).not.toBe(first.body.session_id);
    });

    it.each([
      ['seats for a tier not sold per seat', 400, 'validation_failed', { tier: 'pro', seats: 2 }],
      ['seats above the max', 400, 'validation_failed', { tier: 'team', seats: 501 }],
      ['seats 0', 400, 'validation_failed', { tier: 'team', seats: 0 }],
      ['seats not an integer', 400, 'validation_failed', { tier: 'team', seats: 2.5 }],
      ['an interval the tier lacks', 400, 'price_not_found', { tier: 'team', interval: 'year' }],
      ['an interval that is none', 400, 'validation_failed', { tier: 'pro', interval: 'week' }],
      ['an unknown field', 400, 'validation_failed', { tier: 'pro', coupon: 'x' }],
    ])('%s → %i %s; nothing sent to the provider, nothing recorded', async (_name, status, code, body) => {
      const a = await org(2);
      const res = await post(a, body).expect(status);
      expect(res.body.code).toBe(code);
      expect(fake.requests).toEqual([]);
      expect(await t.db.query(`SELECT 1 FROM open_checkouts WHERE organisation_id = $1 AND session_id IS NOT NULL`, [a.id])).toEqual([]);
    });

    it('fewer seats than members → 409 seats_below_members; nothing sent', async () => {
      const a = await org(3);
      const res = await post(a, { tier: 'team', seats: 2 }).expect(409);
      expect(res.body.code).toBe('seats_below_members');
      expect(fake.requests).toEqual([]);
    });

    it('one trial per organisation: after a canceled subscription, a checkout gives none', async () => {
      const a = await org();
      const sub = subscriptionObject({ organisationId: a.id, tierSource: 'none', price: 'price_pro_m', status: 'trialing' });
      await deliver(t.app.getHttpServer(), subscriptionEvent('created', sub, { created: Math.floor(Date.now() / 1000) - 100 })).expect(200);
      await deliver(t.app.getHttpServer(), subscriptionEvent('deleted', sub, { created: Math.floor(Date.now() / 1000) - 50 })).expect(200);
      const res = await post(a, { tier: 'pro' }).expect(201);
      expect(res.body.trial_days).toBe(0);
      expect(sent()[0].subscription_data).toEqual({ metadata: { organisation_id: a.id, tier: 'pro' } });
    });
  });

  describe('TRIAL_REQUIRE_PAYMENT_METHOD=false, promotion codes and automatic tax', () => {
    beforeAll(() =>
      start({ TRIAL_REQUIRE_PAYMENT_METHOD: 'false', PAYPROVIDER_ALLOW_PROMOTION_CODES: 'true', PAYPROVIDER_AUTOMATIC_TAX: 'true' }),
    );
    afterAll(stop);
    beforeEach(() => fake.reset());

    it('a trial without a card is cancelled at its end; promotion codes and tax are asked for', async () => {
      const a = await org();
      await post(a, { tier: 'pro' }).expect(201);
      const [body] = sent();
      expect(body).toMatchObject({
        payment_method_collection: 'if_required',
        subscription_data: { trial_period_days: '14', trial_settings: { end_behavior: { missing_payment_method: 'cancel' } } },
        allow_promotion_codes: 'true',
        automatic_tax: { enabled: 'true' },
        tax_id_collection: { enabled: 'true' },
      });
      expect(body.customer_update).toBeUndefined();
    });

    it('an existing customer has its address and name updated; a tier without a trial collects a card as always', async () => {
      const a = await org(1);
      await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [a.id, fake.addCustomer('cus_tax1')]);
      await post(a, { tier: 'team' }).expect(201);
      const [body] = sent();
      expect(body.customer_update).toEqual({ address: 'auto', name: 'auto' });
      expect(body.payment_method_collection).toBeUndefined();
      expect((body.subscription_data as Record<string, unknown>).trial_period_days).toBeUndefined();
    });
  });

  it("the strict double refuses these parameters where the provider would (its API description's types)", () => {
    const op = 'POST /v1/checkout/sessions';
    expect(validate(op, { payment_method_collection: 'if_required', allow_promotion_codes: 'true' })).toBeUndefined();
    expect(validate(op, { payment_method_collection: 'sometimes' })?.[0]).toBe(400);
    expect(validate(op, { allow_promotion_codes: 'yes' })?.[0]).toBe(400);
    expect(validate(op, { automatic_tax: { enabled: 'true', mode: 'x' } })?.[0]).toBe(400);
    expect(validate(op, { customer_update: { address: 'always' } })?.[0]).toBe(400);
    expect(validate(op, { subscription_data: { trial_settings: { end_behavior: { missing_payment_method: 'keep' } } } })?.[0]).toBe(400);
    expect(validate(op, { subscription_data: { trial_period_days: 'fourteen' } })?.[0]).toBe(400);
  });
});
