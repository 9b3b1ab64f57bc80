import { randomUUID } from 'node:crypto';
import { packsTiersFile } from './support/credit-packs';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const APP = 'http://localhost:3000';
type User = Awaited<ReturnType<typeof createUserWithSession>>;

/** Credit packs bought from the built-in sandbox provider: no PAYPROVIDER_SECRET_KEY, real HTTP delivery of its events. */
describe('sandbox: credit packs (spec §16.3, §16.6)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { APP_URL: APP, TIERS_FILE: packsTiersFile() } });
  });
  afterAll(() => t.close());

  async function ownerOfNewOrg(): Promise<{ orgId: string; owner: User }> {
    const orgId = (await createOrganisation(t)).id;
    return { orgId, owner: await createUserWithSession(t, { org: orgId, role: 'owner' }) };
  }

  const buy = (user: User, body: Record<string, unknown>) => t.http().post('/api/billing/credits/checkout').set(user.auth).send(body);
  const count = async (sql: string, params: unknown[] = []) => Number((await t.db.query(sql, params))[0].n);
  const customerOf = async (orgId: string) => (await t.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [orgId]))[0].provider_customer_id;

  it('lists the packs in the plan list, each priced by the sandbox itself (one-time, interval null)', async () => {
    const res = await t.http().get('/api/billing/plans').expect(200);
    expect(res.body.credit_packs).toEqual([
      {
        pack: 'tokens_1m',
        metric: 'ai_tokens',
        amount: 1_000_000,
        expires_after_days: 365,
        prices: [{ id: 'price_sandbox_pack_tokens_1m', interval: null, interval_count: null, unit_amount: 1000, currency: 'EUR' }],
      },
      {
        pack: 'tokens_5m',
        metric: 'ai_tokens',
        amount: 5_000_000,
        expires_after_days: null,
        prices: [{ id: 'price_sandbox_pack_tokens_5m', interval: null, interval_count: null, unit_amount: 1000, currency: 'EUR' }],
      },
    ]);
    expect(res.body.data.map((p: { tier: string }) => p.tier)).toEqual(['free', 'pro']);
  });

  it('sells packs end to end: a customer made first, the checkout page of mode payment, Pay, signed events, session report, invoice', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    expect(await customerOf(orgId)).toBeNull();
    const res = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', quantity: 3 }).expect(201);
    expect(Object.keys(res.body).sort()).toEqual(['session_id', 'url']);
    const path = new URL(res.body.url).pathname;
    expect(path).toBe(`/sandbox/checkout/${res.body.session_id}`);
    const customer = await customerOf(orgId);
    expect(customer).toMatch(/^cus_/);
    const [stored] = await t.db.query(`SELECT mode, pack, tier, quantity, amount_total, metadata, customer_id FROM sandbox_checkout_sessions WHERE id = $1`, [res.body.session_id]);
    expect(stored).toEqual({
      mode: 'payment',
      pack: 'tokens_1m',
      tier: null,
      quantity: 3,
      amount_total: 3000,
      metadata: { organisation_id: orgId, pack: 'tokens_1m', quantity: '3', purpose: 'credit_pack' },
      customer_id: customer,
    });

    // Unpaid: the report refuses, as for a subscription.
    const early = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: res.body.session_id }).expect(400);
    expect(early.body.code).toBe('payment_not_completed');

    const page = await t.http().get(path).expect(200);
    expect(page.text).toContain('<h1>Buy 3 × credit pack tokens_1m</h1>');
    expect(page.text).toContain('<p>3,000,000 ai_tokens credits.</p>');
    expect(page.text).toContain('Total: €30.00 (€10.00 per pack)');
    expect(page.text).toContain('<input type="hidden" name="total" value="3000">');
    expect(page.text).toContain('<button type="submit">Pay €30.00</button>');
    expect(page.text).not.toContain('name="interval"');

    // A page whose total is not the session's pays nothing.
    const stale = await t.http().post(`${path}/pay`).type('form').send({ total: '1000' }).expect(303);
    expect(stale.headers.location).toBe(path);
    expect(await count(`SELECT count(*)::int AS n FROM sandbox_invoices WHERE customer_id = $1`, [customer])).toBe(0);
    // A pack is never "started without a card".
    await t.http().post(`${path}/start-trial`).type('form').send({ total: '3000' }).expect(400);

    const pay = await t.http().post(`${path}/pay`).type('form').send({ total: '3000' }).expect(303);
    expect(pay.headers.location).toBe(`${APP}/billing/success?session_id=${res.body.session_id}&credits=1`);
    const sent = await t.db.query(`SELECT id, type, payload, delivered_at FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [res.body.session_id]);
    expect(sent.map((e: { type: string }) => e.type)).toEqual(['checkout.session.completed', 'invoice.paid']);
    expect(sent.every((e: { delivered_at: Date | null }) => e.delivered_at)).toBe(true);
    const session = sent[0].payload.data.object;
    expect(session).toMatchObject({
      object: 'checkout.session',
      mode: 'payment',
      status: 'complete',
      payment_status: 'paid',
      amount_total: 3000,
      customer,
      metadata: { organisation_id: orgId, pack: 'tokens_1m', quantity: '3', purpose: 'credit_pack' },
      invoice: expect.stringMatching(/^in_/),
      subscription: null,
    });
    const invoice = sent[1].payload.data.object;
    expect(invoice).toMatchObject({
      id: session.invoice,
      status: 'paid',
      amount_paid: 3000,
      customer,
      parent: null,
      metadata: { organisation_id: orgId, pack: 'tokens_1m', quantity: '3', purpose: 'credit_pack' },
    });
    expect(invoice.lines.data[0]).toMatchObject({
      amount: 3000,
      quantity: 3,
      parent: { type: 'invoice_item_details', invoice_item_details: { invoice_item: expect.stringMatching(/^ii_/), subscription: null } },
      pricing: { price_details: { price: 'price_sandbox_pack_tokens_1m' } },
    });

    const report = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: res.body.session_id }).expect(200);
    expect(report.body).toEqual({
      session_id: res.body.session_id,
      amount_total: 3000,
      currency: 'EUR',
      tier: null,
      pack: 'tokens_1m',
      quantity: 3,
      created: expect.any(Number),
    });
    // The buyer's invoice is in the billing history (no subscription), with the sandbox's invoice page.
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toEqual([expect.objectContaining({ invoice_id: invoice.id, subscription_id: null, amount_paid: 3000, currency: 'EUR' })]);
    const invoicePage = await t.http().get(new URL(history.body.data[0].hosted_invoice_url).pathname).expect(200);
    expect(invoicePage.text).toContain('<dt>For</dt><dd>credit packs</dd>');
    expect(invoicePage.text).toContain('3 × credit pack tokens_1m');
    expect(invoicePage.text).not.toContain('Metered usage');
    // The card given is the customer's default: a top-up can charge it later.
    expect((await t.db.query(`SELECT default_payment_method FROM sandbox_customers WHERE id = $1`, [customer]))[0].default_payment_method).toMatch(/^pm_/);

    // The signed checkout.session.completed granted the credits: 3 packs of 1,000,000, expiring after 365 days.
    const grants = () =>
      t.db.query(`SELECT amount::float8 AS amount, source, category, reference, expires_at > now() + interval '364 days' AS expires_in_a_year FROM credit_grants WHERE organisation_id = $1`, [orgId]);
    expect(await grants()).toEqual([{ amount: 3_000_000, source: 'top_up', category: 'paid', reference: res.body.session_id, expires_in_a_year: true }]);

    // Paying again buys nothing twice.
    await t.http().post(`${path}/pay`).type('form').send({ total: '3000' }).expect(303);
    expect(await count(`SELECT count(*)::int AS n FROM sandbox_invoices WHERE customer_id = $1`, [customer])).toBe(1);
    expect(await grants()).toHaveLength(1);
    expect((await t.http().get(path).expect(200)).text).toContain('This checkout is already paid');

    // The next purchase reuses the customer; the default quantity is 1.
    const second = await buy(owner, { organisation_id: orgId, pack: 'tokens_5m' }).expect(201);
    expect(await customerOf(orgId)).toBe(customer);
    const [{ quantity, amount_total }] = await t.db.query(`SELECT quantity, amount_total FROM sandbox_checkout_sessions WHERE id = $1`, [second.body.session_id]);
    expect({ quantity, amount_total }).toEqual({ quantity: 1, amount_total: 1000 });
  });

  it("sells packs in the checkout's currency (the price's gbp option): page, events, invoice, report and history in GBP; chf refused", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const res = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', quantity: 2, currency: 'GBP' }).expect(201);
    const path = new URL(res.body.url).pathname;
    const page = await t.http().get(path).expect(200);
    expect(page.text).toContain('Total: £18.00 (£9.00 per pack)');
    await t.http().post(`${path}/pay`).type('form').send({ total: '1800' }).expect(303);
    const sent = await t.db.query(`SELECT payload FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [res.body.session_id]);
    expect(sent[0].payload.data.object).toMatchObject({ amount_total: 1800, currency: 'gbp', payment_status: 'paid' });
    expect(sent[1].payload.data.object).toMatchObject({ amount_paid: 1800, currency: 'gbp' });
    expect(sent[1].payload.data.object.lines.data[0]).toMatchObject({ amount: 1800, currency: 'gbp', quantity: 2 });
    const report = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: res.body.session_id }).expect(200);
    expect(report.body).toMatchObject({ amount_total: 1800, currency: 'GBP', pack: 'tokens_1m', quantity: 2 });
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toEqual([expect.objectContaining({ amount_paid: 1800, currency: 'GBP' })]);
    const refused = await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', currency: 'chf' }).expect(400);
    expect(refused.body.code).toBe('currency_unavailable');
  });

  it("is allowed beside an open subscription checkout and a live subscription, and leaves the subscription's checkout open", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const sub = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);
    await buy(owner, { organisation_id: orgId, pack: 'tokens_1m' }).expect(201);
    // The subscription's checkout is still the organisation's open one, still payable, and answered again.
    const again = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(200);
    expect(again.body.session_id).toBe(sub.body.session_id);
    await t.http().post(`${new URL(sub.body.url).pathname}/pay`).type('form').send('').expect(303);
    // With the subscription live, packs are still for sale (a second subscription is not).
    await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', quantity: 100 }).expect(201);
    await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(409);
  });

  it('refuses bad input with a clear 4xx, before any customer or session is made', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const sessions = () => count(`SELECT count(*)::int AS n FROM sandbox_checkout_sessions`);
    const customers = () => count(`SELECT count(*)::int AS n FROM sandbox_customers`);
    const before = [await sessions(), await customers()];

    for (const pack of ['tokens_2m', 'TOKENS_1M', '__proto__', 'constructor', 'hasOwnProperty', '']) {
      const res = await buy(owner, { organisation_id: orgId, pack }).expect(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.any(String), code: 'invalid_pack' });
    }
    const malformed = [
      {},
      { organisation_id: orgId },
      { pack: 'tokens_1m' },
      { organisation_id: 'not-a-uuid', pack: 'tokens_1m' },
      { organisation_id: orgId, pack: 7 },
      { organisation_id: orgId, pack: 'tokens_1m', quantity: 0 },
      { organisation_id: orgId, pack: 'tokens_1m', quantity: 101 },
      { organisation_id: orgId, pack: 'tokens_1m', quantity: 1.5 },
      { organisation_id: orgId, pack: 'tokens_1m', quantity: '2' },
      { organisation_id: orgId, pack: 'tokens_1m', amount: 10 },
      { organisation_id: orgId, pack: 'tokens_1m', customer: 'cus_someone_else' },
      { organisation_id: orgId, pack: 'tokens_1m', metadata: { purpose: 'x' } },
    ];
    for (const body of malformed) {
      const res = await buy(owner, body).expect(400);
      expect(res.body.code).toBe('validation_failed');
    }
    for (const url of ['https://evil.com/x', '//evil.com', 'javascript:alert(1)']) {
      expect((await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', success_url: url }).expect(400)).body.code).toBe('invalid_return_url');
      expect((await buy(owner, { organisation_id: orgId, pack: 'tokens_1m', cancel_url: url }).expect(400)).body.code).toBe('invalid_return_url');
    }

    // A plain member, a stranger, an organisation that does not exist: 403, the same body for the last two.
    const member = await createUserWithSession(t, { org: orgId, role: 'member' });
    expect((await buy(member, { organisation_id: orgId, pack: 'tokens_1m' }).expect(403)).body.code).toBe('role_forbidden');
    const stranger = (await ownerOfNewOrg()).owner;
    const other = await buy(stranger, { organisation_id: orgId, pack: 'tokens_1m' }).expect(403);
    const none = await buy(stranger, { organisation_id: randomUUID(), pack: 'tokens_1m' }).expect(403);
    expect(other.body).toEqual(none.body);
    expect(other.body.code).toBe('organisation_forbidden');
    await t.http().post('/api/billing/credits/checkout').send({ organisation_id: orgId, pack: 'tokens_1m' }).expect(401);

    expect([await sessions(), await customers()]).toEqual(before);
    expect(await customerOf(orgId)).toBeNull();
  });

  it('an admin may buy; two purchases at the same moment link one customer', async () => {
    const { orgId } = await ownerOfNewOrg();
    const admin = await createUserWithSession(t, { org: orgId, role: 'admin' });
    const [a, b] = await Promise.all([buy(admin, { organisation_id: orgId, pack: 'tokens_1m' }), buy(admin, { organisation_id: orgId, pack: 'tokens_5m' })]);
    expect([a.status, b.status]).toEqual([201, 201]);
    const customer = await customerOf(orgId);
    const used = await t.db.query(`SELECT DISTINCT customer_id FROM sandbox_checkout_sessions WHERE id = ANY($1)`, [[a.body.session_id, b.body.session_id]]);
    expect(used).toEqual([{ customer_id: customer }]);
  });
});
