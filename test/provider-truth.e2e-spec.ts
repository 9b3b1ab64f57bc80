import fc from 'fast-check';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { licenseOf } from './support/license-state';
import { invoiceObject, providerEvent, providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const DAY = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);
const PRICES = { pro: 'price_pro_monthly', proYearly: 'price_pro_yearly', team: 'price_team_monthly' };

/**
 * The service against the provider's real behaviour: its event sequences (any order, retries, portal
 * changes, other products in the same account), its API (through the real SDK and the strict double)
 * and signed events with any content. spec §5–7.
 */
describe('following the real payment provider', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: Object.values(PRICES) });
    t = await startTestApp({
      logLines,
      env: {
        ...fakeProviderEnv(fake, 2000),
        PAYPROVIDER_PRICE_PRO: `${PRICES.pro},${PRICES.proYearly}`,
        PAYPROVIDER_PRICE_TEAM: PRICES.team,
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const send = (event: object) => deliver(t.app.getHttpServer(), event);
  const license = (org: string) => licenseOf(t, org);
  const billing = async (org: string) =>
    (await t.db.query(`SELECT invoice_id FROM billing_history WHERE organisation_id = $1`, [org])).map((r: { invoice_id: string }) => r.invoice_id);
  const customerOf = async (org: string) =>
    (await t.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [org]))[0].provider_customer_id;
  const ledger = async (id: string) => (await t.db.query(`SELECT status, reason FROM webhook_events WHERE id = $1`, [id]))[0];
  /** A subscription as our checkout creates it: our price, the organisation in its metadata. */
  const ourSubscription = (org: string, o: Parameters<typeof subscriptionObject>[0] = {}) =>
    subscriptionObject({ organisationId: org, tierSource: 'none', price: PRICES.pro, ...o });

  describe('a real checkout', () => {
    /**
     * The events one checkout of the pro tier produces, as the provider sends them (each in its own
     * delivery, in no guaranteed order): the subscription starts incomplete and becomes active in the same
     * second; the invoice carries the subscription's metadata.
     */
    function checkoutEvents(org: string, at: number) {
      const customer = providerId('cus');
      const sub = ourSubscription(org, { customer, status: 'incomplete', periodStart: at, periodEnd: at + 30 * DAY });
      const invoice = invoiceObject({ organisationId: org, customer, subscription: sub.id, price: PRICES.pro, periodStart: at, periodEnd: at + 30 * DAY });
      return {
        sub,
        invoice,
        events: [
          providerEvent('customer.created', { id: customer, object: 'customer' }, { created: at }),
          subscriptionEvent('created', sub, { created: at }),
          providerEvent('invoice.created', { ...invoice, status: 'draft' }, { created: at }),
          providerEvent('invoice.finalized', { ...invoice, status: 'open' }, { created: at }),
          providerEvent('invoice.paid', invoice, { created: at + 1 }),
          providerEvent('invoice.payment_succeeded', invoice, { created: at + 1 }),
          subscriptionEvent('updated', { ...sub, status: 'active' }, { created: at + 1 }),
          providerEvent('checkout.session.completed', { id: providerId('cs_test'), object: 'checkout.session' }, { created: at + 1 }),
        ],
      };
    }

    it('ends active on pro with one billing entry, whatever the delivery order', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 1_000_000 }), fc.boolean(), async (seed, redeliver) => {
          const org = (await createOrganisation(t)).id;
          const { invoice, events } = checkoutEvents(org, nowS() - 60);
          const order = fc.sample(fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }), { seed, numRuns: 1 })[0];
          for (const e of redeliver ? [...order, ...order.slice(0, 3)] : order) {
            const res = await send(e);
            expect(res.status).toBe(200);
          }
          expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true, is_expired: false, subscription_status: 'active' });
          expect(await billing(org)).toEqual([invoice.id]);
          expect(await customerOf(org)).toBe(invoice.customer);
        }),
        { numRuns: 12 },
      );
    }, 60_000);

    it('a second checkout while a subscription bills → 409 subscription_exists, the provider is not called', async () => {
      const org = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      const { events } = checkoutEvents(org, nowS() - 60);
      for (const e of events) await send(e).expect(200);
      const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'team' }).expect(409);
      expect(res.body).toEqual({ statusCode: 409, error: 'Conflict', code: 'subscription_exists', message: expect.stringMatching(/portal/) });
      expect(fake.requests).toEqual([]);
    });
  });

  describe('renewals, plan switches, cancellations', () => {
    it('a renewal that fails then succeeds: grace counts from the first past_due, retries do not restart it', async () => {
      const org = (await createOrganisation(t)).id;
      const start = nowS() - 40 * DAY;
      const sub = ourSubscription(org, { periodStart: start, periodEnd: start + 30 * DAY });
      await send(subscriptionEvent('created', sub, { created: start })).expect(200);
      // The renewal attempt fails: the provider moves the period forward and marks it past_due.
      const firstFailure = start + 30 * DAY;
      const renewing = { ...ourSubscription(org, { id: sub.id, customer: sub.customer, status: 'past_due', periodStart: firstFailure, periodEnd: firstFailure + 30 * DAY }) };
      await send(subscriptionEvent('updated', renewing, { created: firstFailure })).expect(200);
      await send(providerEvent('invoice.payment_failed', invoiceObject({ organisationId: org, subscription: sub.id }), { created: firstFailure })).expect(200);
      // Retries three days later, still failing: another past_due update.
      await send(subscriptionEvent('updated', renewing, { created: firstFailure + 3 * DAY })).expect(200);
      expect(await license(org)).toMatchObject({ past_due_since: firstFailure, tier: 'pro', is_active: false, is_expired: true });
      // Ten days after the first failure, beyond the 7 days of grace, although the period runs for 20 more days.

      // The customer pays: active again, and the invoice is recorded once.
      const paid = invoiceObject({ organisationId: org, subscription: sub.id, price: PRICES.pro });
      await send(subscriptionEvent('updated', { ...renewing, status: 'active' }, { created: nowS() - 60 })).expect(200);
      await send(providerEvent('invoice.paid', paid, { created: nowS() - 60 })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true, is_expired: false, past_due_since: null });
      expect(await billing(org)).toEqual([paid.id]);
    });

    it('within grace a past_due subscription keeps its tier active', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org, { status: 'past_due' });
      await send(subscriptionEvent('created', ourSubscription(org, { id: sub.id, customer: sub.customer }), { created: nowS() - 5 * DAY })).expect(200);
      await send(subscriptionEvent('updated', sub, { created: nowS() - 2 * DAY })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true, is_expired: false, subscription_status: 'past_due' });
    });

    it('a plan switch in the portal: the new configured price decides, whatever the old metadata says', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org, { tierSource: 'subscription_metadata', tier: 'pro' });
      await send(subscriptionEvent('created', sub, { created: nowS() - 100 })).expect(200);
      const switched = { ...sub, items: ourSubscription(org, { price: PRICES.team, tierSource: 'none' }).items };
      await send(subscriptionEvent('updated', switched, { created: nowS() - 50 })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'team', is_active: true });
      // A second price of a tier (yearly) is that tier too.
      const yearly = { ...sub, items: ourSubscription(org, { price: PRICES.proYearly, tierSource: 'none' }).items };
      await send(subscriptionEvent('updated', yearly, { created: nowS() - 10 })).expect(200);
      expect((await license(org)).tier).toBe('pro');
    });

    it('a cancellation at period end: active until the deletion, then free', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org);
      await send(subscriptionEvent('created', sub, { created: nowS() - 100 })).expect(200);
      await send(subscriptionEvent('updated', { ...sub, cancel_at_period_end: true }, { created: nowS() - 50 })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true });
      await send(subscriptionEvent('deleted', sub, { created: nowS() - 10 })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'free', is_active: true, is_expired: false, deleted: true });
    });

    it('two .updated of the same second: the subscription is fetched from the provider and what it says applies', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org);
      const at = nowS() - 100;
      await send(subscriptionEvent('created', sub, { created: at - 10 })).expect(200);
      const toTeam = { ...sub, items: ourSubscription(org, { price: PRICES.team }).items };
      // The provider's current state: team. The two events of one second arrive team first, then pro.
      fake.addSubscription({ ...toTeam, status: 'active' });
      await send(subscriptionEvent('updated', toTeam, { created: at })).expect(200);
      const res = await send(subscriptionEvent('updated', sub, { created: at })).expect(200);
      expect(res.body.status).toBe('processed');
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /v1/subscriptions/${sub.id}`]);
      expect((await license(org)).tier).toBe('team');
    });
  });

  describe('events that are not ours, or not applicable', () => {
    it('another product in the same account: its subscription and invoice events are ignored (200), never refused', async () => {
      const org = (await createOrganisation(t)).id;
      const ours = ourSubscription(org);
      const foreign = subscriptionObject({ tierSource: 'none' });
      const foreignInvoice = invoiceObject({ customer: foreign.customer, subscription: foreign.id, price: 'price_other_product' });
      for (const [event, outcome] of [
        [subscriptionEvent('created', ours, { created: nowS() - 50 }), 'processed'],
        [subscriptionEvent('created', foreign), 'ignored'],
        [subscriptionEvent('updated', foreign), 'ignored'],
        [providerEvent('invoice.paid', foreignInvoice), 'ignored'],
        [subscriptionEvent('deleted', foreign), 'ignored'],
      ] as const) {
        const res = await send(event).expect(200);
        expect(res.body.status).toBe(outcome);
      }
      expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true });
    });

    it('an event dated in the future is stored failed (created_in_future) and freezes nothing', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org);
      const future = subscriptionEvent('updated', { ...sub, status: 'canceled' }, { created: nowS() + 30 * DAY });
      expect((await send(future).expect(200)).body.reason).toMatch(/^created_in_future: /);
      await send(subscriptionEvent('created', sub, { created: nowS() - 10 })).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'pro', is_active: true });
    });

    it('a redelivered failed id is applied from the payload stored first, not the new body', async () => {
      const org = (await createOrganisation(t)).id;
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'gold' }));
      expect((await send(event).expect(200)).body.status).toBe('failed');
      const rewritten = { ...event, data: { object: ourSubscription(org, { id: event.data.object.id }) } };
      expect((await send(rewritten).expect(200)).body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/gold/) });
      expect(await license(org)).toBeUndefined();
    });

    it.each<[string, (org: string) => string]>([
      ['NUL characters', (org) => JSON.stringify(subscriptionEvent('created', ourSubscription(org, { customer: 'cus_\u0000nul' })))],
      ['lone surrogates', (org) => JSON.stringify(subscriptionEvent('created', ourSubscription(org))).replace('"object":"subscription"', '"object":"subscription","note":"\\ud800 and \\udfff"')],
      ['200-deep nesting', (org) => JSON.stringify(subscriptionEvent('created', ourSubscription(org))).replace('"object":"subscription"', `"object":"subscription","deep":${'['.repeat(200)}${']'.repeat(200)}`)],
      ['__proto__ keys', (org) => JSON.stringify(subscriptionEvent('created', ourSubscription(org))).replace('"metadata":{"organisation_id"', '"metadata":{"__proto__":{"organisation_id":"x","tier":"enterprise"},"organisation_id"')],
      ['a 900 KB string', (org) => JSON.stringify({ ...subscriptionEvent('created', ourSubscription(org)), padding: 'x'.repeat(900_000) })],
    ])('a signed event with %s is stored and answered 200, never 5xx', async (_name, body) => {
      const org = (await createOrganisation(t)).id;
      const raw = body(org);
      const res = await send({ body: raw });
      expect(res.status).toBe(200);
      expect(['processed', 'failed']).toContain(res.body.status);
      expect(await ledger(JSON.parse(raw).id)).toMatchObject({ status: res.body.status });
      expect(await license(org)).toMatchObject({ tier: 'pro' });
      expect(Object.prototype).not.toHaveProperty('tier');
    });
  });

  describe('invoices and customers', () => {
    it('invoice.paid and invoice.payment_succeeded of one invoice give one entry, whichever arrives first', async () => {
      const org = (await createOrganisation(t)).id;
      const invoice = invoiceObject({ organisationId: org, price: PRICES.pro });
      await send(providerEvent('invoice.paid', invoice)).expect(200);
      const second = await send(providerEvent('invoice.payment_succeeded', invoice)).expect(200);
      expect(second.body.reason).toBe(`invoice ${invoice.id} was already recorded`);
      expect(await billing(org)).toEqual([invoice.id]);
    });

    it('an invoice before its subscription waits (unmatched) when it carries our price, and is applied with it', async () => {
      const org = (await createOrganisation(t)).id;
      const sub = ourSubscription(org);
      const invoice = invoiceObject({ customer: sub.customer, subscription: sub.id, price: PRICES.pro });
      expect((await send(providerEvent('invoice.paid', invoice)).expect(200)).body.status).toBe('unmatched');
      await send(subscriptionEvent('created', sub, { created: nowS() - 10 })).expect(200);
      expect(await billing(org)).toEqual([invoice.id]);
    });

    it('hosted_invoice_url is kept only when it is https', async () => {
      const org = (await createOrganisation(t)).id;
      await send(providerEvent('invoice.paid', invoiceObject({ organisationId: org, hostedInvoiceUrl: 'javascript:alert(1)' }))).expect(200);
      await send(providerEvent('invoice.paid', invoiceObject({ organisationId: org, hostedInvoiceUrl: 'http://invoice.example.com/i/1' }))).expect(200);
      await send(providerEvent('invoice.paid', invoiceObject({ organisationId: org, hostedInvoiceUrl: 'https://invoice.example.com/i/2' }))).expect(200);
      const urls = await t.db.query(`SELECT hosted_invoice_url FROM billing_history WHERE organisation_id = $1 ORDER BY hosted_invoice_url`, [org]);
      expect(urls.map((r: { hosted_invoice_url: string | null }) => r.hosted_invoice_url)).toEqual(['https://invoice.example.com/i/2', null, null]);
    });

    it('customer.deleted unlinks the customer; the next checkout creates a new one', async () => {
      const org = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      const sub = ourSubscription(org);
      await send(subscriptionEvent('created', sub, { created: nowS() - 100 })).expect(200);
      await send(subscriptionEvent('deleted', sub, { created: nowS() - 50 })).expect(200);
      const res = await send(providerEvent('customer.deleted', { id: sub.customer, object: 'customer', deleted: true })).expect(200);
      expect(res.body.status).toBe('processed');
      expect(await customerOf(org)).toBeNull();
      await t.http().get('/api/billing/portal').set(owner.auth).expect(404);
      await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'pro' }).expect(201);
      expect(fake.requests.at(-1)!.body).not.toHaveProperty('customer');
    });

    it('a stored customer the provider no longer knows is replaced by a new one at checkout, with a warning', async () => {
      const org = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      // A test-mode customer after switching to a live key: the provider answers 400 resource_missing.
      await t.db.query(`UPDATE organisations SET provider_customer_id = 'cus_test_mode_only' WHERE id = $1`, [org]);
      const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'pro' }).expect(201);
      expect(res.body.session_id).toMatch(/^cs_test_/);
      expect(fake.requests.map((r) => r.body.customer)).toEqual(['cus_test_mode_only', undefined]);
      expect(await customerOf(org)).toBeNull();
      const warning = logLines.map((l) => JSON.parse(l)).find((l) => l.customerId === 'cus_test_mode_only');
      expect(warning).toMatchObject({ level: 40, msg: expect.stringMatching(/new customer/) });
    });
  });

  it('/api/health reports the real provider', async () => {
    expect((await t.http().get('/api/health').expect(200)).body).toEqual({ status: 'ok', database: 'up', provider: 'stripe' });
  });
});
