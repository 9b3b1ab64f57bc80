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
    // The interval is chosen in the Pay button's own form, which also says the total it showed.
    expect(page.text).toContain('<label><input type="radio" name="interval" value="month" data-unit-amount="2900" checked> €29.00 per month</label>');
    expect(page.text).toContain('<label><input type="radio" name="interval" value="year" data-unit-amount="29000"> €290.00 per year</label>');
    expect(page.text).toContain('<input type="hidden" name="total" value="2900">');
    expect(page.text).toContain('<button type="submit" data-pay>Pay €29.00</button>');
    expect(page.text).not.toContain('name="seats"');
    expect(page.text).toContain(`<a href="${APP}/billing/cancel">Cancel and return</a>`);
    // One script, the service's own file (the CSP allows no other): the page works without it.
    expect(page.text.match(/<script[^>]*>/gi)).toEqual(['<script src="/sandbox/assets/checkout.js" defer>']);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self';/);
    const script = await t.http().get('/sandbox/assets/checkout.js').expect(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.text).toContain("document.querySelectorAll('form[data-checkout]')");

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

  it('pays what the Pay button said: a choice changed without script pays nothing until the page shows its total', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const s = await checkout(owner, { organisation_id: orgId, tier: 'pro' });
    const subscriptions = await countRows('sandbox_subscriptions');

    // Yearly chosen, but the button (no script) still said €29.00: nothing is paid, the page comes back saying €290.00.
    const stale = await t.http().post(`${s.path}/pay`).type('form').send({ interval: 'year', total: '2900' }).expect(303);
    expect(stale.headers.location).toBe(`${s.path}?interval=year&seats=1&recheck=1`);
    expect(await countRows('sandbox_subscriptions')).toBe(subscriptions);
    const shown = await t.http().get(stale.headers.location).expect(200);
    expect(shown.text).toContain('<div class="error" role="alert"><p>Nothing was charged: the total for your choice is €290.00 per year. Check it, then press Pay €290.00.</p></div>');
    expect(shown.text).toContain('value="year" data-unit-amount="29000" checked>');
    expect(shown.text).toContain('<input type="hidden" name="total" value="29000">');
    expect(shown.text).toContain('<button type="submit" data-pay>Pay €290.00</button>');

    // Bad input is refused and changes nothing.
    for (const form of [{ interval: 'weekly', total: '2900' }, { interval: 'year', total: '290.00' }, { interval: 'year', total: '29000', extra: '1' }]) {
      const refused = await t.http().post(`${s.path}/pay`).type('form').send(form).expect(400);
      expect(refused.body.code).toBe('validation_failed');
    }
    await t.http().get(`${s.path}?recheck=yes`).expect(400);
    expect(await countRows('sandbox_subscriptions')).toBe(subscriptions);

    // Paid with the total shown: yearly, €290.00, as the button said.
    await t.http().post(`${s.path}/pay`).type('form').send({ interval: 'year', total: '29000' }).expect(303);
    const report = await t.http().get('/api/billing/session').set(owner.auth).query({ session_id: s.id }).expect(200);
    expect(report.body).toMatchObject({ amount_total: 29000, currency: 'EUR', tier: 'pro' });
    const { subscription } = (await t.http().get('/api/billing/subscription').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
    expect(subscription).toMatchObject({ tier: 'pro', interval: 'year' });
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
    const portalId = path.split('/').pop();
    const page = await t.http().get(path).expect(200);
    const [, subId] = page.text.match(/<h2 id="h-(sub_[A-Za-z0-9]+)">pro plan \(active\)<\/h2>/) ?? [];
    expect(subId).toBeDefined();
    const base = `${path}/subscriptions/${subId}`;
    // Every plan on sale, with its billing and (none of the default tiers is sold per seat) no seats field.
    expect(page.text).toContain(`<form method="get" action="${base}/change" aria-labelledby="plan-${subId}-team">`);
    expect(page.text).toContain('<button type="submit" class="plain">Switch to team</button>');
    expect(page.text).toContain('<button type="submit" class="plain">Change pro</button>');
    expect(page.text).not.toContain('name="seats"');
    expect(page.text).toContain(`<a class="button secondary" href="${base}/cancel-now">Cancel now</a>`);
    expect(page.text).not.toMatch(/<script/i);
    const events = async () => (await t.db.query(`SELECT type FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [portalId])).map((e: { type: string }) => e.type);
    const invoices = async () => (await t.db.query(`SELECT amount_paid FROM sandbox_invoices WHERE subscription_id = $1`, [subId])).map((i: { amount_paid: number }) => Number(i.amount_paid));
    const review = (query: Record<string, string>) => t.http().get(`${base}/change`).query(query);
    const change = (form: Record<string, string>) => t.http().post(`${base}/change`).type('form').send(form);

    // A tier that cannot be bought, the plan it has, or a malformed field: refused, nothing changed.
    await review({ tier: 'free' }).expect(400);
    await review({ tier: 'pro', interval: 'month' }).expect(409);
    expect((await review({ tier: 'pro', interval: 'weekly' }).expect(400)).body.code).toBe('validation_failed');
    await change({ tier: 'free' }).expect(400);
    await change({ tier: 'pro', interval: 'month' }).expect(409);
    expect((await change({ tier: 'team', amount_due: '7000.00' }).expect(400)).body.code).toBe('validation_failed');
    expect((await change({ tier: 'team', when: 'later' }).expect(400)).body.code).toBe('validation_failed');

    // The first click reviews: the provider's preview, the amount due now, and a button that says it. Nothing changes.
    const reviewed = await review({ tier: 'team', interval: 'month' }).expect(200);
    expect(reviewed.text).toContain('<h1>Confirm your change</h1>');
    const [, due] = reviewed.text.match(/<p class="total">Due now: <strong>(€[\d,.]+)<\/strong><\/p>/) ?? [];
    expect(due).toMatch(/^€(69|70)\.\d\d$/); // €99.00 less the unused part of €29.00, prorated to the second
    expect(reviewed.text).toContain(`<button type="submit">Confirm and pay ${due}</button>`);
    expect(reviewed.text).toMatch(/<tr><td>Unused time on 1 × pro \(monthly\) after [^<]+<\/td><td>-€2\d\.\d\d<\/td><\/tr>/);
    const hidden = Object.fromEntries([...reviewed.text.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map(([, name, value]) => [name, value]));
    expect(hidden).toEqual({ tier: 'team', interval: 'month', seats: '1', when: 'now', proration_date: expect.stringMatching(/^\d+$/), amount_due: expect.stringMatching(/^\d+$/) });
    expect(await events()).toEqual([]);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'pro' });

    // An amount the subscription no longer charges (another change came in between): nothing is charged, the review again.
    const moved = await change({ ...hidden, amount_due: String(Number(hidden.amount_due) + 1) }).expect(409);
    expect(moved.text).toContain('Nothing was charged: the subscription changed since the amount was shown.');
    expect(await events()).toEqual([]);

    // Confirmed: charged exactly what was shown, then back to the portal with the new state.
    const switched = await change(hidden).expect(303);
    expect(switched.headers.location).toBe(`${path}?done=changed`);
    expect(await status(owner, orgId)).toEqual({ tier: 'team', is_active: true, is_expired: false });
    expect((await invoices()).sort((a: number, b: number) => a - b)).toEqual([2900, Number(hidden.amount_due)].sort((a, b) => a - b));
    const after = await t.http().get(switched.headers.location).expect(200);
    expect(after.text).toContain('<p class="done" role="status">Your plan was changed.</p>');
    expect(after.text).toContain(`<h2 id="h-${subId}">team plan (active)</h2>`);
    await t.http().get(`${path}?done=everything`).expect(400);
    // Two changes within one second still apply in order (a confirmation without the review's fields: charged as it stands).
    await change({ tier: 'enterprise' }).expect(303);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'enterprise' });

    // "Cancel now" asks first: its page changes nothing.
    const ask = await t.http().get(`${base}/cancel-now`).expect(200);
    expect(ask.text).toContain('<h1>Cancel your enterprise plan now?</h1>');
    expect(ask.text).toContain(`<form method="post" action="${base}/cancel-now" class="actions">`);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'enterprise' });
    await t.http().get(`${path}/subscriptions/sub_someone_else/cancel-now`).expect(409);
    const ended = await t.http().post(`${base}/cancel-now`).type('form').send('').expect(303);
    expect(ended.headers.location).toBe(`${path}?done=ended`);
    expect(await status(owner, orgId)).toEqual({ tier: 'free', is_active: true, is_expired: false });
    expect(await events()).toEqual([
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
    const [, subId] = (await t.http().get(path).expect(200)).text.match(/<h2 id="h-(sub_[A-Za-z0-9]+)">/) ?? [];
    const act = (action: string, form: Record<string, string> = {}) => t.http().post(`${path}/subscriptions/${subId}/${action}`).type('form').send(form);
    const types = async () => (await t.db.query(`SELECT type FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [portalId])).map((e: { type: string }) => e.type);

    // Smaller: reviewed as "from" the period's end, with nothing due now; then a schedule, and the tier stays until then.
    const reviewed = await t.http().get(`${path}/subscriptions/${subId}/change`).query({ tier: 'pro', interval: 'month' }).expect(200);
    const [, from] = reviewed.text.match(/<p class="total">From <strong>(\d{1,2} [A-Z][a-z]{2} \d{4})<\/strong>: €29\.00 per month\.<\/p>/) ?? [];
    expect(from).toBeDefined();
    expect(reviewed.text).toContain('<p>Nothing is charged now: your current plan stays until then.</p>');
    expect(reviewed.text).toContain(`<button type="submit">Confirm the change from ${from}</button>`);
    expect(reviewed.text).toContain('<input type="hidden" name="when" value="period_end">');
    expect(reviewed.text).not.toContain('name="amount_due"');
    // A confirmation that expected it now (the subscription changed since): nothing changes, the review again.
    expect((await act('change', { tier: 'pro', interval: 'month', when: 'now' }).expect(409)).text).toContain('<h1>Confirm your change</h1>');
    expect(await types()).toEqual([]);
    const scheduled = await act('change', { tier: 'pro', interval: 'month', seats: '1', when: 'period_end' }).expect(303);
    expect(scheduled.headers.location).toBe(`${path}?done=scheduled`);
    expect(await types()).toEqual(['subscription_schedule.created', 'customer.subscription.updated', 'subscription_schedule.updated']);
    expect(await status(owner, orgId)).toMatchObject({ tier: 'team' });
    const page = (await t.http().get(path).expect(200)).text;
    expect(page).toMatch(/<dt>Pending change<\/dt><dd>pro, €29\.00 per month, from \d{1,2} [A-Z][a-z]{2} \d{4}<\/dd>/);
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
      await t.http().get('/sandbox/assets/checkout.js').expect(404);
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
