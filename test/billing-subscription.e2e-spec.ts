import { randomUUID } from 'node:crypto';
import { FakeProvider } from './support/fake-provider';
import { licenseOf } from './support/license-state';
import { auditOf, startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { createOrganisation, createUserWithSession, TestApp } from './support/test-app';

const DAY = 86_400;

describe('billing: the subscription and its changes (spec §11.4) against the strict double', () => {
  let fake: FakeProvider;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    t = await startSubscriptionApp(fake);
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
  });

  const read = (user: { auth: Record<string, string> }, organisationId: string) =>
    t.http().get('/api/billing/subscription').query({ organisation_id: organisationId }).set(user.auth);
  const post = (user: { auth: Record<string, string> }, path: string, body: object) => t.http().post(`/api/billing/subscription/${path}`).set(user.auth).send(body);
  const providerCalls = () => fake.requests.map((r) => `${r.method} ${r.path.replace(/(sub_sched|sub)_[0-9a-f]+/g, '$1_…')}`);
  const ledger = (ids: string[]) => t.db.query(`SELECT type, status, reason FROM webhook_events WHERE id = ANY($1) ORDER BY id`, [ids]);

  describe('GET /api/billing/subscription', () => {
    it("answers the organisation's live subscription to any member, from the provider's events", async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 3 });
      const member = await createUserWithSession(t, { org: s.org.id, role: 'member' });
      const res = await read(member, s.org.id).expect(200);
      expect(res.body).toEqual({
        subscription: {
          id: s.subscriptionId,
          tier: 'team',
          status: 'active',
          interval: 'month',
          seats: 3,
          current_period_end: s.periodEnd,
          cancel_at_period_end: false,
          trial_end: null,
          pending_change: null,
          plan_version: 1,
        },
      });
      expect(fake.requests).toEqual([]);
    });

    it('answers trial_end while trialing only (the provider keeps it on the subscription after the trial)', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 3 });
      const trialEnd = Math.floor(Date.now() / 1000) + 5 * DAY;
      const setTrial = (status: string, end: number) =>
        t.db.query(`UPDATE provider_subscriptions SET status = $2, trial_end = $3 WHERE subscription_id = $1`, [s.subscriptionId, status, end]);
      await setTrial('trialing', trialEnd);
      expect((await read(s.owner, s.org.id).expect(200)).body.subscription).toMatchObject({ status: 'trialing', trial_end: trialEnd });
      await setTrial('active', trialEnd - 30 * DAY);
      expect((await read(s.owner, s.org.id).expect(200)).body.subscription).toMatchObject({ status: 'active', trial_end: null });
    });

    it('answers null without a live subscription; 403 with one body for a stranger and an unknown organisation', async () => {
      const org = await createOrganisation(t);
      const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
      expect((await read(owner, org.id).expect(200)).body).toEqual({ subscription: null });
      const stranger = await createUserWithSession(t);
      const a = await read(stranger, org.id).expect(403);
      const b = await read(stranger, randomUUID()).expect(403);
      expect(a.body).toEqual({ ...b.body });
      await t.http().get('/api/billing/subscription').query({ organisation_id: org.id, extra: 1 }).set(owner.auth).expect(400);
    });
  });

  describe('upgrades: now, prorated, invoiced at once', () => {
    it('previews more seats from the provider, changing nothing; the change with its proration_date charges exactly that', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 3, members: 2 });
      const preview = await post(s.owner, 'preview', { organisation_id: s.org.id, seats: 5 }).expect(200);
      const sent = fake.requests.find((r) => r.path === '/v1/invoices/create_preview')!;
      const itemId = s.provider().items.data[0].id;
      expect(sent.body).toEqual({
        subscription: s.subscriptionId,
        subscription_details: {
          items: [{ id: itemId, price: 'team_month', quantity: '5' }],
          proration_behavior: 'always_invoice',
          proration_date: String(preview.body.proration_date),
        },
      });
      const { lines } = preview.body;
      expect(preview.body).toMatchObject({ currency: 'USD', effective_at: preview.body.proration_date });
      // The provider's arithmetic: a credit for the unused 3 seats, a charge for 5 over the same remaining time.
      expect(lines).toHaveLength(2);
      expect(lines[0].amount).toBeLessThan(0);
      expect(lines[1].amount).toBeGreaterThan(-lines[0].amount);
      expect(preview.body.amount_due).toBe(lines[0].amount + lines[1].amount);
      expect(lines[1]).toMatchObject({ period_start: preview.body.proration_date, period_end: s.periodEnd });
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(3);
      expect(await auditOf(t, s.org.id)).toEqual([]);

      fake.requests.length = 0;
      const changed = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 5, proration_date: preview.body.proration_date }).expect(200);
      expect(changed.body.subscription).toMatchObject({ tier: 'team', seats: 5, interval: 'month', pending_change: null });
      const update = fake.requests.find((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${s.subscriptionId}`)!;
      expect(update.body).toEqual({
        items: [{ id: itemId, price: 'team_month', quantity: '5' }],
        proration_behavior: 'always_invoice',
        payment_behavior: 'pending_if_incomplete',
        proration_date: String(preview.body.proration_date),
      });
      // Applied at once: the status read straight after has the new seats as its users limit.
      expect((await read(s.owner, s.org.id)).body).toEqual(changed.body);
      const status = await t.http().get('/api/licensing/status').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(200);
      expect(status.body.usage.users.limit).toBe(5);
      const [audit] = await auditOf(t, s.org.id);
      expect(audit).toMatchObject({ action: 'subscription.changed', actor: `user:${s.owner.id}` });
      expect(audit.before.subscription.seats).toBe(3);
      expect(audit.after.subscription.seats).toBe(5);

      // The provider's events follow: they change nothing more, and the invoice is what the preview showed.
      const events = fake.queuedEvents.map((e) => e.id);
      expect(fake.queuedEvents.map((e) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid', 'invoice.payment_succeeded']);
      expect(await fake.deliverEvents()).toEqual([200, 200, 200]);
      expect((await ledger(events)).map((e: { status: string }) => e.status)).not.toContain('failed');
      expect((await read(s.owner, s.org.id)).body).toEqual(changed.body);
      const history = await t.db.query(`SELECT amount_paid FROM billing_history WHERE organisation_id = $1`, [s.org.id]);
      expect(history.map((h: { amount_paid: string | number }) => Number(h.amount_paid))).toEqual([preview.body.amount_due]);
      expect(await auditOf(t, s.org.id)).toHaveLength(1);
    });

    it('a later tier keeps the interval and, per seat, takes the members as seats; monthly to yearly is an upgrade too', async () => {
      const s = await subscribed(t, fake, { price: 'pro_month', members: 4 });
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, tier: 'team' }).expect(200);
      expect(res.body.subscription).toMatchObject({ tier: 'team', interval: 'month', seats: 4, pending_change: null });
      expect((await licenseOf(t, s.org.id)).tier).toBe('team');

      const yearly = await post(s.owner, 'change', { organisation_id: s.org.id, interval: 'year' }).expect(200);
      expect(yearly.body.subscription).toMatchObject({ tier: 'team', interval: 'year', seats: 4, pending_change: null });
      // A new interval starts a new period now, at the provider.
      expect(yearly.body.subscription.current_period_end).toBeGreaterThan(Date.now() / 1000 + 300 * DAY);
      expect((await auditOf(t, s.org.id)).map((a: { action: string }) => a.action)).toEqual(['subscription.changed', 'subscription.changed']);
    });

    it('a declined card leaves the plan in force: 402 payment_failed, the provider keeps a pending_update, nothing is applied', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 2 });
      fake.declineCards(s.customer);
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 9 }).expect(402);
      expect(res.body.code).toBe('payment_failed');
      expect(s.provider().items.data[0].quantity).toBe(2);
      expect(s.provider().pending_update).toMatchObject({ subscription_items: [expect.objectContaining({ quantity: 9 })] });
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(2);
      expect(await auditOf(t, s.org.id)).toEqual([]);
      expect(await fake.deliverEvents()).toEqual([200, 200]);
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(2);
    });

    it("a proration_date outside the current period (a preview of an earlier one): 400 invalid_proration_date with the provider's message, nothing changed", async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 2 });
      const stale = s.provider().items.data[0].current_period_start - DAY;
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3, proration_date: stale }).expect(400);
      expect(res.body).toMatchObject({ code: 'invalid_proration_date', message: 'proration_date must be within the current period of the subscription.' });
      expect(s.provider().items.data[0].quantity).toBe(2);
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(2);
      expect(await auditOf(t, s.org.id)).toEqual([]);
      // The preview's own proration_date is within the period: the same change then goes through.
      const preview = await post(s.owner, 'preview', { organisation_id: s.org.id, seats: 3 }).expect(200);
      await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3, proration_date: preview.body.proration_date }).expect(200);
    });

    it("a missing tax location is the customer's to fix: 400 tax_location_invalid with the provider's message", async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 2, automaticTax: true });
      fake.withoutTaxLocation(s.customer);
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3 }).expect(400);
      expect(res.body).toMatchObject({ code: 'tax_location_invalid', message: expect.stringContaining("customer's location isn't recognized") });
      const preview = await post(s.owner, 'preview', { organisation_id: s.org.id, seats: 3 }).expect(400);
      expect(preview.body.code).toBe('tax_location_invalid');
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(2);
      expect(await auditOf(t, s.org.id)).toEqual([]);
    });

    it('any other provider failure is 502 provider_error, and nothing changes', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 2 });
      fake.failPath(`/v1/subscriptions/${s.subscriptionId}`, { status: 500 });
      try {
        const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3 }).expect(502);
        expect(res.body).toEqual({ statusCode: 502, error: 'Bad Gateway', message: expect.any(String), code: 'provider_error' });
      } finally {
        fake.failPath(`/v1/subscriptions/${s.subscriptionId}`, undefined);
      }
      expect((await read(s.owner, s.org.id)).body.subscription.seats).toBe(2);
      expect(await auditOf(t, s.org.id)).toEqual([]);
      // The claim of the failed change ended with it: the next change goes through.
      await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3 }).expect(200);
    });
  });

  describe("downgrades: at the period's end, through a subscription schedule", () => {
    it('previews the next invoice, schedules fewer seats as pending_change, and releases it', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 6, members: 2 });
      const preview = await post(s.owner, 'preview', { organisation_id: s.org.id, seats: 4 }).expect(200);
      expect(preview.body.effective_at).toBe(s.periodEnd);
      expect(fake.requests.find((r) => r.path === '/v1/invoices/create_preview')!.body).toMatchObject({
        subscription_details: { proration_behavior: 'none' },
      });
      expect(preview.body.lines).toEqual([expect.objectContaining({ period_start: s.periodEnd })]);
      expect(preview.body.amount_due).toBe(preview.body.lines[0].amount);

      fake.requests.length = 0;
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 4 }).expect(200);
      expect(res.body.subscription).toMatchObject({
        tier: 'team',
        seats: 6,
        pending_change: { tier: 'team', interval: 'month', seats: 4, effective_at: s.periodEnd },
      });
      expect(providerCalls()).toEqual(['POST /v1/subscription_schedules', 'POST /v1/subscription_schedules/sub_sched_…']);
      expect(fake.requests[0].body).toEqual({ from_subscription: s.subscriptionId });
      expect(fake.requests[1].body).toMatchObject({
        end_behavior: 'release',
        phases: [
          { items: [{ price: 'team_month', quantity: '6' }], start_date: String(s.periodStart), end_date: String(s.periodEnd) },
          { items: [{ price: 'team_month', quantity: '4' }] },
        ],
      });
      // Still 6 seats until then: the users limit in force does not move.
      expect((await t.http().get('/api/licensing/status').query({ organisation_id: s.org.id }).set(s.owner.auth)).body.usage.users.limit).toBe(6);
      expect(await fake.deliverEvents()).toEqual([200, 200, 200]);
      expect((await read(s.owner, s.org.id)).body).toEqual(res.body);

      fake.requests.length = 0;
      await t.http().delete('/api/billing/subscription/pending-change').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(204);
      expect(providerCalls()).toEqual(['POST /v1/subscription_schedules/sub_sched_…/release']);
      expect((await read(s.owner, s.org.id)).body.subscription).toMatchObject({ seats: 6, pending_change: null });
      expect(await fake.deliverEvents()).toEqual([200, 200]);
      expect((await read(s.owner, s.org.id)).body.subscription.pending_change).toBeNull();
      const gone = await t.http().delete('/api/billing/subscription/pending-change').query({ organisation_id: s.org.id }).set(s.owner.auth).expect(404);
      expect(gone.body.code).toBe('no_pending_change');
      expect((await auditOf(t, s.org.id)).map((a: { action: string }) => a.action)).toEqual([
        'subscription.changed',
        'subscription.pending_change_released',
      ]);
    });

    it('an earlier tier and yearly to monthly wait for the period end; a second downgrade updates the same schedule', async () => {
      const s = await subscribed(t, fake, { price: 'team_year', seats: 2 });
      const monthly = await post(s.owner, 'change', { organisation_id: s.org.id, interval: 'month' }).expect(200);
      expect(monthly.body.subscription).toMatchObject({ interval: 'year', pending_change: { tier: 'team', interval: 'month', seats: 2 } });
      fake.requests.length = 0;
      const pro = await post(s.owner, 'change', { organisation_id: s.org.id, tier: 'pro', interval: 'month' }).expect(200);
      expect(pro.body.subscription).toMatchObject({ tier: 'team', pending_change: { tier: 'pro', interval: 'month', seats: 1, effective_at: s.periodEnd } });
      expect(providerCalls()).toEqual(['GET /v1/subscription_schedules/sub_sched_…', 'POST /v1/subscription_schedules/sub_sched_…']);
    });

    it('an upgrade replaces a pending downgrade: the schedule is released, then the subscription changed', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 5 });
      await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3 }).expect(200);
      fake.requests.length = 0;
      const res = await post(s.owner, 'change', { organisation_id: s.org.id, seats: 8 }).expect(200);
      expect(res.body.subscription).toMatchObject({ seats: 8, pending_change: null });
      expect(providerCalls()).toEqual([
        'POST /v1/subscription_schedules/sub_sched_…/release',
        'GET /v1/subscriptions/sub_…',
        'POST /v1/subscriptions/sub_…',
      ]);
      expect(s.provider().schedule).toBeNull();
      expect(await fake.deliverEvents()).not.toContain(500);
      expect((await read(s.owner, s.org.id)).body).toEqual(res.body);
    });
  });

  describe('cancel and resume', () => {
    it('sets and clears cancel_at_period_end at the provider; the paid tier stays until then', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 2 });
      const cancelled = await post(s.owner, 'cancel', { organisation_id: s.org.id }).expect(200);
      expect(cancelled.body.subscription).toMatchObject({ tier: 'team', status: 'active', cancel_at_period_end: true });
      expect(fake.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v1/subscriptions/${s.subscriptionId}`, body: { cancel_at_period_end: 'true' } });
      expect((await licenseOf(t, s.org.id)).tier).toBe('team');
      expect((await post(s.owner, 'cancel', { organisation_id: s.org.id }).expect(400)).body.code).toBe('no_change');
      expect(await fake.deliverEvents()).toEqual([200]);

      const resumed = await post(s.owner, 'resume', { organisation_id: s.org.id }).expect(200);
      expect(resumed.body.subscription.cancel_at_period_end).toBe(false);
      expect(s.provider().cancel_at_period_end).toBe(false);
      expect((await post(s.owner, 'resume', { organisation_id: s.org.id }).expect(400)).body.code).toBe('no_change');
      const audit = await auditOf(t, s.org.id);
      expect(audit.map((a: { action: string; actor: string }) => [a.action, a.actor])).toEqual([
        ['subscription.cancel_scheduled', `user:${s.owner.id}`],
        ['subscription.resumed', `user:${s.owner.id}`],
      ]);
    });

    it('a cancellation replaces a pending downgrade (the provider leaves a scheduled subscription to its schedule)', async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 5 });
      await post(s.owner, 'change', { organisation_id: s.org.id, seats: 3 }).expect(200);
      const res = await post(s.owner, 'cancel', { organisation_id: s.org.id }).expect(200);
      expect(res.body.subscription).toMatchObject({ cancel_at_period_end: true, pending_change: null, seats: 5 });
    });
  });

  describe('bad input: a clear 4xx, nothing sent to the provider, nothing changed', () => {
    it.each([
      ['an unknown field', { seats: 4, coupon: 'x' }, 400, 'validation_failed'],
      ['seats of 0', { seats: 0 }, 400, 'validation_failed'],
      ['seats beyond the tier max', { seats: 501 }, 400, 'validation_failed'],
      ['seats as a string', { seats: '4' }, 400, 'validation_failed'],
      ['an interval the API does not sell', { interval: 'week' }, 400, 'validation_failed'],
      ['an interval the tier lacks', { tier: 'pro', interval: 'year' }, 400, 'price_not_found'],
      ['seats for a tier not sold per seat', { tier: 'pro', seats: 2 }, 400, 'validation_failed'],
      ['free as the target', { tier: 'free' }, 400, 'invalid_tier'],
      ['an unknown tier', { tier: 'platinum' }, 400, 'invalid_tier'],
      ['the same plan', { tier: 'team', interval: 'month', seats: 3 }, 400, 'no_change'],
      ['a proration_date that is not an integer', { seats: 4, proration_date: 'soon' }, 400, 'validation_failed'],
      ['fewer seats than members', { seats: 2 }, 409, 'seats_below_members'],
    ])('%s', async (_, body, status, code) => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 3, members: 3 });
      for (const path of ['change', 'preview']) {
        const res = await post(s.owner, path, { organisation_id: s.org.id, ...body }).expect(status);
        expect(res.body.code).toBe(code);
      }
      expect(fake.requests).toEqual([]);
      expect((await read(s.owner, s.org.id)).body.subscription).toMatchObject({ tier: 'team', seats: 3, pending_change: null });
      expect(await auditOf(t, s.org.id)).toEqual([]);
    });

    it("a member's change, another organisation's id, no subscription: 403 before 404 and 409; then 404 no_subscription", async () => {
      const s = await subscribed(t, fake, { price: 'team_month', seats: 4, members: 3 });
      const member = await createUserWithSession(t, { org: s.org.id, role: 'member' });
      const other = await createOrganisation(t);
      const otherOwner = await createUserWithSession(t, { org: other.id, role: 'owner' });
      for (const path of ['change', 'cancel', 'resume']) {
        expect((await post(member, path, { organisation_id: s.org.id, seats: 2 }).expect(path === 'change' ? 403 : 400)).body.code).toBe(
          path === 'change' ? 'role_forbidden' : 'validation_failed',
        );
        expect((await post(member, path, { organisation_id: s.org.id }).expect(403)).body.code).toBe('role_forbidden');
        expect((await post(otherOwner, path, { organisation_id: s.org.id }).expect(403)).body.code).toBe('organisation_forbidden');
      }
      await t.http().delete('/api/billing/subscription/pending-change').query({ organisation_id: s.org.id }).set(member.auth).expect(403);
      await post(otherOwner, 'preview', { organisation_id: s.org.id, seats: 4 }).expect(403);
      for (const path of ['change', 'preview']) {
        expect((await post(otherOwner, path, { organisation_id: other.id, seats: 4 }).expect(404)).body.code).toBe('no_subscription');
      }
      for (const path of ['cancel', 'resume']) {
        expect((await post(otherOwner, path, { organisation_id: other.id }).expect(404)).body.code).toBe('no_subscription');
      }
      expect(fake.requests).toEqual([]);
      expect(await auditOf(t, s.org.id)).toEqual([]);
    });
  });
});
