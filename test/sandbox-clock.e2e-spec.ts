import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxStore } from '../src/sandbox/sandbox.store';
import { cli } from './support/run-cli';
import { freePort } from './support/free-port';
import { createOrganisation, createUserWithSession, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';

const APP = 'http://localhost:3000';
const DAY = 86_400;
type User = Awaited<ReturnType<typeof createUserWithSession>>;

/** A plan table with a per-seat tier that has a trial, and a plain tier without one. */
const TIERS = {
  free: { projects: 3, ai_tokens: 100000, users: 3 },
  pro: { projects: 25, ai_tokens: 2000000, users: 10 },
  team: { projects: 100, ai_tokens: 10000000, users: { per_seat: true, max: 20 }, trial_days: 14 },
};

/**
 * The sandbox as the provider in development (spec §11.6): its test clock (`sandbox:advance`), renewals, a
 * trial's end with and without a card, scheduled changes and cancellations at the period's end, and changes
 * made through the service's own routes, with proration by the second, all as signed events through the
 * service's webhook, in order.
 */
describe('sandbox test clock and subscription changes', () => {
  let t: TestApp;
  let webhookUrl: string;
  const env = { PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };

  beforeAll(async () => {
    const tiersFile = join(mkdtempSync(join(tmpdir(), 'sandbox-tiers-')), 'tiers.json');
    writeFileSync(tiersFile, JSON.stringify(TIERS));
    t = await startTestApp({ env: { APP_URL: APP, TIERS_FILE: tiersFile, TRIAL_REQUIRE_PAYMENT_METHOD: 'false' } });
    webhookUrl = `${t.baseUrl}/api/webhooks/payprovider`;
  });
  afterAll(() => t.close());

  async function ownerOfNewOrg(): Promise<{ orgId: string; owner: User }> {
    const orgId = (await createOrganisation(t)).id;
    return { orgId, owner: await createUserWithSession(t, { org: orgId, role: 'owner' }) };
  }

  /** A sandbox checkout as the provider is asked for one, paid (or its trial started) on its page. */
  async function buy(
    orgId: string,
    plan: { tier: string; seats?: number; interval?: 'month' | 'year'; trialDays?: number; noCard?: boolean },
  ): Promise<string> {
    const session = await t.app.get(SandboxStore).createCheckout({
      tier: plan.tier,
      interval: plan.interval ?? 'month',
      quantity: plan.seats ?? 1,
      trialDays: plan.trialDays ?? 0,
      paymentMethodCollection: plan.noCard ? 'if_required' : 'always',
      metadata: { organisation_id: orgId, tier: plan.tier },
      clientReferenceId: orgId,
      successUrl: `${APP}/billing/success`,
      cancelUrl: `${APP}/billing/cancel`,
    });
    const form = { interval: plan.interval ?? 'month', seats: String(plan.seats ?? 1) };
    await t.http().post(`/sandbox/checkout/${session.id}/${plan.noCard ? 'start-trial' : 'pay'}`).type('form').send(form).expect(303);
    return (await t.app.get(SandboxStore).findCheckout(session.id))!.subscriptionId!;
  }

  const advance = (orgId: string, days: number, url = webhookUrl) =>
    cli(['sandbox:advance', '--org', orgId, '--days', String(days), '--url', url], env, { app: t.app });
  const license = async (owner: User, orgId: string) =>
    (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
  const subscriptionRead = async (owner: User, orgId: string) =>
    (await t.http().get('/api/billing/subscription').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.subscription;
  const sandboxEvents = async (sourceId: string): Promise<{ id: string; type: string; payload: any; delivered_at: Date | null }[]> =>
    t.db.query(`SELECT id, type, payload, delivered_at FROM sandbox_events WHERE source_id = $1 ORDER BY seq`, [sourceId]);
  const invoices = async (subscriptionId: string) =>
    t.db.query(`SELECT amount_paid, billing_reason, period_start, period_end, lines FROM sandbox_invoices WHERE subscription_id = $1 ORDER BY paid_at, id`, [subscriptionId]);
  /** The service delivers port changes' events in the background: wait until the sandbox has sent them all. */
  async function delivered(sourceId: string): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM sandbox_events WHERE source_id = $1 AND delivered_at IS NULL`, [sourceId]);
      if (n === 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`events of ${sourceId} still pending`);
  }

  it('renews each period with a paid invoice (invoice.paid), in order, and audits the move', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const subId = await buy(orgId, { tier: 'pro' });
    const res = await advance(orgId, 65);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const events = await sandboxEvents(subId);
    expect(events.map((e) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid', 'customer.subscription.updated', 'invoice.paid']);
    expect(res.json).toMatchObject({ organisation_id: orgId, subscription_id: subId, status: 'active', events: events.map(({ id, type }) => ({ id, type })) });
    expect(Date.parse(res.json.clock) / 1000).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 65 * DAY - 5);
    // Real-time `created`, strictly increasing, so the service applies them in this order.
    const created = events.map((e) => e.payload.created);
    expect([...created].sort((a, b) => a - b)).toEqual(created);
    expect(new Set(created).size).toBe(created.length);

    const paid = await invoices(subId);
    expect(paid.map((i: { amount_paid: number; billing_reason: string }) => [i.amount_paid, i.billing_reason])).toEqual([
      [2900, 'subscription_create'],
      [2900, 'subscription_cycle'],
      [2900, 'subscription_cycle'],
    ]);
    expect(paid[1].period_start).toBe(paid[0].period_end);
    expect(paid[2].period_start).toBe(paid[1].period_end);
    const updated = events[2].payload.data.object;
    expect(updated.items.data[0]).toMatchObject({ quantity: 1, current_period_start: paid[2].period_start, current_period_end: paid[2].period_end });
    expect(updated.items.data[0].price.recurring).toMatchObject({ interval: 'month', interval_count: 1 });
    expect(events[2].payload.data.previous_attributes.items.data[0].current_period_end).toBe(paid[2].period_start);

    const ledger = await t.db.query(`SELECT status FROM webhook_events WHERE id = ANY($1)`, [events.map((e) => e.id)]);
    expect(ledger.map((e: { status: string }) => e.status)).toEqual(['processed', 'processed', 'processed', 'processed']);
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toHaveLength(3);
    expect((await license(owner, orgId)).license).toEqual({ tier: 'pro', is_active: true, is_expired: false });

    const [audit] = await t.db.query(`SELECT actor, action, before, after FROM audit_log WHERE organisation_id = $1 AND action = 'sandbox.clock_advanced'`, [orgId]);
    expect(audit.actor).toMatch(/^cli:/);
    expect(audit.after).toMatchObject({ subscription_id: subId, days: 65, status: 'active' });
    expect(audit.after.clock - audit.before.clock).toBe(65 * DAY);
  });

  it('a trial with a card: trial_will_end three days before, then active with the first paid invoice for the seats', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const subId = await buy(orgId, { tier: 'team', seats: 3, trialDays: 14 });
    const created = (await sandboxEvents(subId)).length;
    expect(await subscriptionRead(owner, orgId)).toMatchObject({ tier: 'team', status: 'trialing', seats: 3, interval: 'month' });
    expect((await license(owner, orgId)).license).toEqual({ tier: 'team', is_active: true, is_expired: false });

    expect((await advance(orgId, 10)).json.events).toEqual([]);
    expect((await advance(orgId, 2)).json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.trial_will_end']);
    const willEnd = (await sandboxEvents(subId)).at(-1)!.payload.data.object;
    expect(willEnd).toMatchObject({ status: 'trialing', default_payment_method: expect.stringMatching(/^pm_/), items: { data: [{ quantity: 3 }] } });

    const ended = await advance(orgId, 3);
    expect(ended.json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid']);
    const [trialInvoice, first] = await invoices(subId);
    expect(trialInvoice.amount_paid).toBe(0);
    expect(first.amount_paid).toBe(3 * 9900);
    expect(first.period_start).toBe(willEnd.trial_end);
    expect((await sandboxEvents(subId)).slice(created).every((e) => e.delivered_at)).toBe(true);
    expect(await subscriptionRead(owner, orgId)).toMatchObject({ status: 'active', seats: 3 });
    expect((await license(owner, orgId)).license).toEqual({ tier: 'team', is_active: true, is_expired: false });
  });

  it('a trial without a card ends in customer.subscription.deleted, back on free; a card-only session refuses it', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const store = t.app.get(SandboxStore);
    const cardOnly = await store.createCheckout({
      tier: 'team', interval: 'month', quantity: 1, trialDays: 14, paymentMethodCollection: 'always',
      metadata: { organisation_id: orgId, tier: 'team' }, clientReferenceId: orgId, successUrl: `${APP}/s`, cancelUrl: `${APP}/c`,
    });
    const refused = await t.http().post(`/sandbox/checkout/${cardOnly.id}/start-trial`).type('form').send({ interval: 'month', seats: '1' }).expect(400);
    expect(refused.text).toContain('This checkout needs a card.');
    expect((await store.findCheckout(cardOnly.id))!.status).toBe('open');

    const subId = await buy(orgId, { tier: 'team', seats: 2, trialDays: 14, noCard: true });
    const [created] = await t.db.query(
      `SELECT payload FROM sandbox_events WHERE type = 'customer.subscription.created' AND payload -> 'data' -> 'object' ->> 'id' = $1`,
      [subId],
    );
    expect(created.payload.data.object).toMatchObject({
      status: 'trialing',
      default_payment_method: null,
      trial_settings: { end_behavior: { missing_payment_method: 'cancel' } },
    });
    expect((await license(owner, orgId)).license).toMatchObject({ tier: 'team', is_active: true });

    const res = await advance(orgId, 14);
    expect(res.json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.trial_will_end', 'customer.subscription.deleted']);
    expect(res.json.status).toBe('canceled');
    expect(await invoices(subId)).toHaveLength(1); // the trial's own, nothing charged
    expect((await license(owner, orgId)).license).toEqual({ tier: 'free', is_active: true, is_expired: false });
  });

  it("the service's checkout (yearly, 2 seats, its trial, a card optional) is what the sandbox's page sells", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    await createUserWithSession(t, { org: orgId, role: 'member' });
    const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'team', interval: 'year', seats: 2 }).expect(201);
    expect(res.body.trial_days).toBe(14);
    const path = new URL(res.body.url).pathname;
    const page = (await t.http().get(path).expect(200)).text;
    expect(page).toContain('value="year" data-unit-amount="99000" checked> €990.00 per seat per year</label>');
    expect(page).toContain('<input id="seats" name="seats" type="number" inputmode="numeric" min="1" max="20" value="2" required>');
    expect(page).toMatch(/<p class="total">14 days free, until \d{1,2} [A-Z][a-z]{2} \d{4}; then <output id="total" aria-live="polite">€1,980\.00 per year \(2 seats\)<\/output><\/p>/);
    expect(page).toContain(`<button type="submit" class="plain" formaction="${path}/start-trial">Start trial without a card</button>`);
    await t.http().post(`${path}/start-trial`).type('form').send({ interval: 'year', seats: '2' }).expect(303);
    expect(await subscriptionRead(owner, orgId)).toMatchObject({ tier: 'team', status: 'trialing', interval: 'year', seats: 2 });
    const res2 = await advance(orgId, 14);
    expect(res2.json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.trial_will_end', 'customer.subscription.deleted']);
    expect((await license(owner, orgId)).license).toEqual({ tier: 'free', is_active: true, is_expired: false });
  });

  it("a downgrade through the service's route waits for the period's end as a schedule, then takes effect", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const subId = await buy(orgId, { tier: 'team', seats: 5 });
    const change = await t.http().post('/api/billing/subscription/change').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(200);
    const periodEnd = change.body.subscription.current_period_end;
    expect(change.body.subscription).toMatchObject({ tier: 'team', seats: 5, pending_change: { tier: 'pro', interval: 'month', effective_at: periodEnd } });
    await delivered(subId);
    const scheduled = await sandboxEvents(subId);
    expect(scheduled.map((e) => e.type)).toEqual(['subscription_schedule.created', 'customer.subscription.updated', 'subscription_schedule.updated']);
    const schedule = scheduled[2].payload.data.object;
    expect(schedule).toMatchObject({
      object: 'subscription_schedule',
      status: 'active',
      subscription: subId,
      end_behavior: 'release',
      phases: [
        { items: [{ price: 'price_sandbox_team', quantity: 5 }], end_date: periodEnd },
        { items: [{ price: 'price_sandbox_pro', quantity: 1 }], start_date: periodEnd },
      ],
    });
    expect((await license(owner, orgId)).license).toMatchObject({ tier: 'team' });

    const res = await advance(orgId, 31);
    expect(res.json.events.map((e: { type: string }) => e.type)).toEqual([
      'subscription_schedule.released',
      'customer.subscription.updated',
      'invoice.paid',
    ]);
    expect((await sandboxEvents(subId)).at(-3)!.payload.data.object).toMatchObject({ status: 'released', released_subscription: subId });
    expect((await invoices(subId)).at(-1)).toMatchObject({ amount_paid: 2900, period_start: periodEnd });
    expect(await subscriptionRead(owner, orgId)).toMatchObject({ tier: 'pro', pending_change: null });
    expect((await license(owner, orgId)).license).toEqual({ tier: 'pro', is_active: true, is_expired: false });
  });

  it('cancel at the period end, resume, cancel again: the clock ends it at the period end', async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    const subId = await buy(orgId, { tier: 'pro' });
    const post = (path: string) => t.http().post(`/api/billing/subscription/${path}`).set(owner.auth).send({ organisation_id: orgId }).expect(200);
    expect((await post('cancel')).body.subscription).toMatchObject({ cancel_at_period_end: true });
    expect((await post('resume')).body.subscription).toMatchObject({ cancel_at_period_end: false });
    await post('cancel');
    await delivered(subId);
    const updates = (await sandboxEvents(subId)).map((e) => e.payload.data);
    expect(updates.map((d) => [d.object.cancel_at_period_end, d.previous_attributes.cancel_at_period_end])).toEqual([
      [true, false],
      [false, true],
      [true, false],
    ]);

    expect((await advance(orgId, 20)).json.events).toEqual([]);
    expect((await license(owner, orgId)).license).toEqual({ tier: 'pro', is_active: true, is_expired: false });
    const ended = await advance(orgId, 12);
    expect(ended.json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.deleted']);
    expect((await license(owner, orgId)).license).toEqual({ tier: 'free', is_active: true, is_expired: false });
  });

  it("an upgrade charges what its preview showed, prorated by the second on the subscription's clock", async () => {
    const { orgId, owner } = await ownerOfNewOrg();
    await createUserWithSession(t, { org: orgId, role: 'member' });
    const subId = await buy(orgId, { tier: 'team', seats: 2 });
    await advance(orgId, 10); // the test clock is now ten days ahead of the service's
    const preview = await t.http().post('/api/billing/subscription/preview').set(owner.auth).send({ organisation_id: orgId, seats: 4 }).expect(200);
    const [row] = await t.db.query(`SELECT current_period_start AS ps, current_period_end AS pe, clock_offset FROM sandbox_subscriptions WHERE id = $1`, [subId]);
    const at = preview.body.proration_date + Number(row.clock_offset);
    const part = (amount: number) => Math.round((amount * (Number(row.pe) - at)) / (Number(row.pe) - Number(row.ps)));
    expect(preview.body).toMatchObject({ amount_due: part(4 * 9900) - part(2 * 9900), currency: 'EUR' });
    expect(preview.body.lines.map((l: { amount: number }) => l.amount)).toEqual([-part(2 * 9900), part(4 * 9900)]);

    const change = await t.http()
      .post('/api/billing/subscription/change')
      .set(owner.auth)
      .send({ organisation_id: orgId, seats: 4, proration_date: preview.body.proration_date })
      .expect(200);
    expect(change.body.subscription).toMatchObject({ tier: 'team', seats: 4, pending_change: null });
    await delivered(subId);
    const proration = (await invoices(subId)).at(-1);
    expect(proration).toMatchObject({ billing_reason: 'subscription_update', amount_paid: preview.body.amount_due });
    expect(proration.lines.map((l: { proration: boolean }) => l.proration)).toEqual([true, true]);
    expect((await sandboxEvents(subId)).slice(-2).map((e) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid']);
  });

  it('says what it cannot do: usage errors (2), no subscription or no listener (1, the rest delivered by --days 0)', async () => {
    for (const [args, message] of [
      [['sandbox:advance', '--days', '3'], /--org is required/],
      [['sandbox:advance', '--org', 'acme', '--days', '3'], /--org must be a UUID/],
      [['sandbox:advance', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11'], /--days is required/],
      [['sandbox:advance', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', '--days', '-1'], /--days must be a whole number from 0 to 3660/],
      [['sandbox:advance', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', '--days', '1.5'], /--days must be/],
    ] as const) {
      const res = await cli([...args], env, { app: t.app });
      expect([res.code, res.stdout]).toEqual([2, '']);
      expect(res.stderr).toMatch(message);
    }
    const { orgId, owner } = await ownerOfNewOrg();
    const none = await advance(orgId, 1);
    expect([none.code, none.stderr]).toEqual([1, `error: organisation ${orgId} has no sandbox subscription (buy one through checkout first)\n`]);

    const subId = await buy(orgId, { tier: 'pro' });
    const away = await advance(orgId, 31, `http://127.0.0.1:${await freePort()}/api/webhooks/payprovider`);
    expect(away.code).toBe(1);
    expect(away.stderr).toMatch(/the clock moved, but not every event was delivered: the webhook endpoint could not be reached/);
    expect((await sandboxEvents(subId)).filter((e) => !e.delivered_at).map((e) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid']);
    const rest = await advance(orgId, 0);
    expect(rest.code).toBe(0);
    expect(rest.json.events.map((e: { type: string }) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid']);
    expect((await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.data).toHaveLength(2);
  });
});
