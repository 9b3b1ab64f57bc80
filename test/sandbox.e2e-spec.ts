import { signatureHeader } from '../src/provider/provider-signature';
import { createOrganisation, createUserWithSession, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';

const APP = 'http://localhost:3000';
type User = Awaited<ReturnType<typeof createUserWithSession>>;

/** The purchase flow against the built-in sandbox provider: no PAYPROVIDER_SECRET_KEY, real HTTP delivery. */
describe('sandbox payment provider', () => {
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ env: { APP_URL: APP }, logLines });
  });
  afterAll(() => t.close());

  async function ownerOfNewOrg(): Promise<{ orgId: string; owner: User }> {
    const orgId = (await createOrganisation(t)).id;
    return { orgId, owner: await createUserWithSession(t, { org: orgId, role: 'owner' }) };
  }

  async function checkout(owner: User, body: Record<string, unknown>): Promise<{ id: string; path: string; url: string }> {
    const res = await t.http().post('/api/billing/checkout').set(owner.auth).send(body).expect(201);
    const url: string = res.body.url;
    return { id: res.body.session_id, url, path: new URL(url).pathname };
  }

  const status = async (owner: User, orgId: string) =>
    (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.license;

  const countRows = async (table: string) => Number((await t.db.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

  it('says at start that it runs in sandbox mode', () => {
    expect(logLines.some((l) => /sandbox mode/.test(l))).toBe(true);
  });

  it('sells a tier end to end: checkout page, Pay, signed events through the webhook, session report, license', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const port = new URL(t.baseUrl).port;
    const s = await checkout(owner, { organisation_id: orgId, tier: 'pro' });
    expect(s.id).toMatch(/^cs_test_[A-Za-z0-9]{58}$/);
    expect(s.url).toBe(`http://localhost:${port}/sandbox/checkout/${s.id}`);

    // Not paid yet: the provider says unpaid, so the report refuses.
    const early = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: s.id }).expect(400);
    expect(early.body.code).toBe('payment_not_completed');

    const page = await t.http().get(s.path).expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.text).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(page.text).toContain('<title>Subscribe to pro · Sandbox payments</title>');
    expect(page.text).toContain('Sandbox — no real payment');
    expect(page.text).toContain('<h1>Subscribe to pro</h1>');
    expect(page.text).toContain(`<form method="post" action="/sandbox/checkout/${s.id}/pay"`);
    expect(page.text).toContain('<button type="submit">Pay €29.00</button>');
    expect(page.text).toContain(`<a href="${APP}/billing/cancel">Cancel and return</a>`);
    expect(page.text).not.toMatch(/<script/i);

    const pay = await t.http().post(`${s.path}/pay`).type('form').send('').expect(303);
    expect(pay.headers.location).toBe(`${APP}/billing/success?session_id=${s.id}`);

    // Both events went through the real endpoint (signature guard, ledger, handlers).
    const sent = await t.db.query(`SELECT id, type, delivered_at FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [s.id]);
    expect(sent.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.created', 'invoice.payment_succeeded']);
    expect(sent.every((e: { delivered_at: Date | null }) => e.delivered_at)).toBe(true);
    const ledger = await t.db.query(`SELECT id, type, status FROM webhook_events WHERE id = ANY($1) ORDER BY type`, [sent.map((e: { id: string }) => e.id)]);
    expect(ledger.map((e: { status: string }) => e.status)).toEqual(['processed', 'processed']);

    const report = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: s.id }).expect(200);
    expect(report.body).toEqual({ session_id: s.id, amount_total: 2900, currency: 'EUR', tier: 'pro', created: expect.any(Number) });
    expect(await status(owner, orgId)).toEqual({ tier: 'pro', is_active: true, is_expired: false });

    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toHaveLength(1);
    expect(history.body.data[0]).toMatchObject({ amount_paid: 2900, currency: 'EUR' });
    const invoiceUrl: string = history.body.data[0].hosted_invoice_url;
    expect(invoiceUrl).toMatch(new RegExp(`^http://localhost:${port}/sandbox/invoices/in_`));
    const invoice = await t.http().get(new URL(invoiceUrl).pathname).expect(200);
    expect(invoice.text).toContain('€29.00');

    // Paying again (a double click, the back button) buys nothing twice.
    await t.http().post(`${s.path}/pay`).type('form').send('').expect(303);
    expect((await t.db.query(`SELECT count(*)::int AS n FROM sandbox_subscriptions WHERE customer_id = (SELECT customer_id FROM sandbox_checkout_sessions WHERE id = $1)`, [s.id]))[0].n).toBe(1);
    const again = await t.http().get(s.path).expect(200);
    expect(again.text).toContain('This checkout is already paid');
  });

  it('escapes what it shows, and answers unknown or expired sessions with a page and no effect', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const hostile = `${APP}/cancel?x="><script>alert(1)</script>`;
    const s = await checkout(owner, { organisation_id: orgId, tier: 'team', cancel_url: hostile });
    const page = await t.http().get(s.path).expect(200);
    expect(page.text).not.toContain('<script>');
    expect(page.text).toContain('href="http://localhost:3000/cancel?x=&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"');
    expect(page.text).toContain('Pay €99.00');

    for (const path of ['/sandbox/checkout/cs_test_unknown', '/sandbox/checkout/..%2Fportal', '/sandbox/portal/bps_unknown']) {
      const res = await t.http().get(path).expect(404);
      expect(res.text).toContain('<h1>Not found</h1>');
    }
    const subscriptions = await countRows('sandbox_subscriptions');
    await t.http().post('/sandbox/checkout/cs_test_unknown/pay').expect(404);

    await t.db.query(`UPDATE sandbox_checkout_sessions SET expires_at = created - 1 WHERE id = $1`, [s.id]);
    await t.http().get(s.path).expect(410);
    await t.http().post(`${s.path}/pay`).expect(410);
    expect(await countRows('sandbox_subscriptions')).toBe(subscriptions);
    expect(await status(owner, orgId)).toEqual({ tier: 'free', is_active: true, is_expired: false });
  });

  it('keeps a paid session when the webhook endpoint fails, and delivers the same events on retry', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const s = await checkout(owner, { organisation_id: orgId, tier: 'enterprise' });
    // The receiver's database refuses subscription writes: the endpoint answers 5xx, as in an outage.
    await t.db.query(`CREATE FUNCTION sandbox_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$`);
    await t.db.query(`CREATE TRIGGER sandbox_test_refuse BEFORE INSERT OR UPDATE ON provider_subscriptions FOR EACH ROW EXECUTE FUNCTION sandbox_test_refuse()`);
    try {
      const failed = await t.http().post(`${s.path}/pay`).type('form').send('').expect(502);
      expect(failed.text).toContain('Payment recorded, but the service was not notified');
      expect(failed.text).toMatch(/answered 5\d\d/);
      expect(failed.text).toContain(`<form method="post" action="/sandbox/checkout/${s.id}/pay"><button type="submit">Try delivery again</button>`);
      expect(await status(owner, orgId)).toMatchObject({ tier: 'free' });
      // The provider's side is paid either way.
      await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: s.id }).expect(200);
    } finally {
      await t.db.query(`DROP TRIGGER sandbox_test_refuse ON provider_subscriptions`);
      await t.db.query(`DROP FUNCTION sandbox_test_refuse()`);
    }
    const retry = await t.http().post(`${s.path}/pay`).type('form').send('').expect(303);
    expect(retry.headers.location).toBe(`${APP}/billing/success?session_id=${s.id}`);
    expect(await status(owner, orgId)).toEqual({ tier: 'enterprise', is_active: true, is_expired: false });
    const events = await t.db.query(`SELECT id FROM sandbox_events WHERE source_id = $1`, [s.id]);
    expect(events).toHaveLength(2);
    const ledger = await t.db.query(`SELECT status FROM webhook_events WHERE id = ANY($1)`, [events.map((e: { id: string }) => e.id)]);
    expect(ledger.map((e: { status: string }) => e.status)).toEqual(['processed', 'processed']);
  });

  it('the portal switches the tier (an upgrade: now, with a paid proration invoice) and cancels, through signed events', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const s = await checkout(owner, { organisation_id: orgId, tier: 'pro' });
    await t.http().post(`${s.path}/pay`).type('form').send('').expect(303);

    const portal = await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(portal.body.url).toMatch(/^http:\/\/localhost:\d+\/sandbox\/portal\/bps_[A-Za-z0-9]{40}$/);
    const path = new URL(portal.body.url).pathname;
    const page = await t.http().get(path).expect(200);
    const [, subId] = page.text.match(/<label for="tier-(sub_[A-Za-z0-9]+)">Plan<\/label>/) ?? [];
    expect(subId).toBeDefined();
    expect(page.text).toContain(`<select id="tier-${subId}" name="tier"><option value="pro" selected>pro</option>`);
    expect(page.text).toContain('<button type="submit" class="secondary">Cancel now</button>');
    expect(page.text).not.toMatch(/<script/i);
    const change = (form: Record<string, string>) => t.http().post(`${path}/subscriptions/${subId}/change`).type('form').send(form);

    // A tier that cannot be bought, or the plan it has, changes nothing.
    await change({ tier: 'free' }).expect(400);
    await change({ tier: 'pro', interval: 'month' }).expect(409);
    await change({ tier: 'pro', interval: 'weekly' }).expect(400);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'pro' });

    const switched = await change({ tier: 'team' }).expect(303);
    expect(switched.headers.location).toBe(`${APP}/billing`);
    expect(await status(owner, orgId)).toEqual({ tier: 'team', is_active: true, is_expired: false });
    // Two changes within one second still apply in order.
    await change({ tier: 'enterprise' }).expect(303);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'enterprise' });

    await t.http().post(`${path}/subscriptions/${subId}/cancel-now`).type('form').send('').expect(303);
    expect(await status(owner, orgId)).toEqual({ tier: 'free', is_active: true, is_expired: false });
    const types = await t.db.query(`SELECT type FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [path.split('/').pop()]);
    expect(types.map((e: { type: string }) => e.type)).toEqual([
      'customer.subscription.updated',
      'invoice.paid',
      'customer.subscription.updated',
      'invoice.paid',
      'customer.subscription.deleted',
    ]);

    // Cancelling twice, a subscription of another customer, or an action the portal does not have, does nothing.
    const twice = await t.http().post(`${path}/subscriptions/${subId}/cancel-now`).type('form').send('').expect(409);
    expect(twice.text).toContain('Nothing changed');
    await t.http().post(`${path}/subscriptions/sub_someone_else/cancel-now`).type('form').send('').expect(409);
    await t.http().post(`${path}/subscriptions/${subId}/explode`).type('form').send('').expect(404);
    expect((await t.http().get(path).expect(200)).text).toContain('This customer has no active subscription.');
  });

  it('the portal schedules a smaller plan for the period end, gives it up, cancels at the period end and resumes', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const s = await checkout(owner, { organisation_id: orgId, tier: 'team' });
    await t.http().post(`${s.path}/pay`).type('form').send('').expect(303);
    const portal = await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    const path = new URL(portal.body.url).pathname;
    const portalId = path.split('/').pop();
    const [, subId] = (await t.http().get(path).expect(200)).text.match(/<label for="tier-(sub_[A-Za-z0-9]+)">Plan<\/label>/) ?? [];
    const act = (action: string, form: Record<string, string> = {}) => t.http().post(`${path}/subscriptions/${subId}/${action}`).type('form').send(form);
    const types = async () => (await t.db.query(`SELECT type FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [portalId])).map((e: { type: string }) => e.type);

    // Smaller: a schedule for the period's end; the tier stays until then.
    await act('change', { tier: 'pro', interval: 'month' }).expect(303);
    expect(await types()).toEqual(['subscription_schedule.created', 'customer.subscription.updated', 'subscription_schedule.updated']);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'team' });
    const page = (await t.http().get(path).expect(200)).text;
    expect(page).toMatch(/<dt>Pending change<\/dt><dd>pro, €29\.00 per month, from \d{4}-\d\d-\d\d<\/dd>/);
    expect(page).toContain('<button type="submit" class="plain">Keep the current plan</button>');
    // The provider refuses a cancellation while a schedule manages the subscription: nothing changes.
    const refused = await act('cancel').expect(409);
    expect(refused.text).toContain('managed by the subscription schedule');
    expect((await types()).length).toBe(3);

    await act('release').expect(303);
    expect((await types()).slice(3)).toEqual(['subscription_schedule.released', 'customer.subscription.updated']);
    await act('release').expect(409);

    await act('cancel').expect(303);
    expect((await t.http().get(path).expect(200)).text).toContain('<button type="submit">Resume subscription</button>');
    await act('resume').expect(303);
    const updates = await t.db.query(
      `SELECT payload -> 'data' AS data FROM sandbox_events WHERE source_id = $1 AND type = 'customer.subscription.updated' ORDER BY seq`,
      [portalId],
    );
    expect(updates.slice(-2).map((u: { data: any }) => [u.data.object.cancel_at_period_end, u.data.previous_attributes.cancel_at_period_end])).toEqual([
      [true, false],
      [false, true],
    ]);
    expect(await status(owner, orgId)).toEqual({ tier: 'team', is_active: true, is_expired: false });
    const ledger = await t.db.query(
      `SELECT w.status FROM webhook_events w JOIN sandbox_events e ON e.id = w.id WHERE e.source_id = $1`,
      [portalId],
    );
    expect(ledger.every((e: { status: string }) => ['processed', 'ignored'].includes(e.status))).toBe(true);
    expect(ledger).toHaveLength((await types()).length);
  });

  it('a portal for a customer the sandbox does not know is no customer record (404)', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    await t.db.query(`UPDATE organisations SET provider_customer_id = 'cus_elsewhere' WHERE id = $1`, [orgId]);
    const res = await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(404);
    expect(res.body.code).toBe('no_customer');
  });

  it('the webhook the sandbox calls really verifies signatures: unsigned or wrongly signed events are refused', async () => {
    const { orgId } = await ownerOfNewOrg();
    const body = JSON.stringify({
      id: 'evt_forged_1',
      object: 'event',
      type: 'customer.subscription.created',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'sub_forged', object: 'subscription', status: 'active', metadata: { organisation_id: orgId, tier: 'enterprise' } } },
    });
    const before = await countRows('webhook_events');
    await t.http().post('/api/webhooks/payprovider').set('Content-Type', 'application/json').send(body).expect(400);
    await t.http()
      .post('/api/webhooks/payprovider')
      .set('Content-Type', 'application/json')
      .set('Payprovider-Signature', signatureHeader(body, 'whsec_not_ours'))
      .send(body)
      .expect(400);
    expect(await countRows('webhook_events')).toBe(before);
    // The secret the sandbox signs with is the configured one.
    expect(t.config.webhookSecrets[0]).toBe(TEST_WEBHOOK_SECRET);
  });

  it('any instance on the same database serves and completes a session another one created', async () => {
    const other = await startTestApp({ databaseUrl: t.databaseUrl, env: { APP_URL: APP } });
    try {
      const { orgId, owner } = await ownerOfNewOrg();
      const s = await checkout(owner, { organisation_id: orgId, tier: 'pro' });
      await other.http().get(s.path).expect(200);
      await other.http().post(`${s.path}/pay`).type('form').send('').expect(303);
      expect(await status(owner, orgId)).toMatchObject({ tier: 'pro', is_active: true });
    } finally {
      await other.close();
    }
  });
});

describe('sandbox pages with a real provider configured', () => {
  it('do not exist', async () => {
    const t = await startTestApp({ env: { PAYPROVIDER_SECRET_KEY: 'sk_test_configured', PAYPROVIDER_API_URL: 'http://127.0.0.1:9' } });
    try {
      await t.db.query(
        `INSERT INTO sandbox_checkout_sessions (id, tier, amount_total, currency, metadata, success_url, cancel_url, created, expires_at)
         VALUES ('cs_test_leftover', 'pro', 2900, 'eur', '{}', 'http://localhost:3000/s', 'http://localhost:3000/c', 0, 9999999999)`,
      );
      await t.http().get('/sandbox/checkout/cs_test_leftover').expect(404);
      await t.http().post('/sandbox/checkout/cs_test_leftover/pay').expect(404);
      expect((await t.db.query(`SELECT status FROM sandbox_checkout_sessions`))[0].status).toBe('open');
    } finally {
      await t.close();
    }
  });
});

describe('sandbox links with PUBLIC_URL', () => {
  it('point under it (the service behind a proxy or a mapped port)', async () => {
    const t = await startTestApp({ env: { PUBLIC_URL: 'https://billing.example.test' } });
    try {
      const orgId = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
      const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);
      expect(res.body.url).toBe(`https://billing.example.test/sandbox/checkout/${res.body.session_id}`);
    } finally {
      await t.close();
    }
  });
});
