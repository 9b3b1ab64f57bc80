import { licenseOf } from './support/license-state';
import { webhookEvents } from '../src/common/metrics';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import {
  invoiceObject,
  invoicePaidEvent,
  providerEvent,
  providerId,
  subscriptionEvent,
  subscriptionObject,
} from './support/provider-events';
import { deliver } from './support/webhook-signing';

describe('webhook events: effects', () => {
  let t: TestApp;
  const logLines: string[] = [];
  beforeAll(async () => {
    t = await startTestApp({ logLines });
  });
  afterAll(() => t.close());

  const send = (event: object) => deliver(t.app.getHttpServer(), event);
  const newOrg = async () => (await createOrganisation(t)).id;
  const license = (orgId: string) => licenseOf(t, orgId);
  const ledger = async (id: string) => {
    const [row] = await t.db.query(`SELECT * FROM webhook_events WHERE id = $1`, [id]);
    return row;
  };
  const customerOf = async (orgId: string) =>
    (await t.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [orgId]))[0].provider_customer_id;
  const billing = async (orgId: string) =>
    t.db.query(
      `SELECT invoice_id, subscription_id, amount_paid, currency, period_start, period_end, paid_at, hosted_invoice_url
       FROM billing_history WHERE organisation_id = $1 ORDER BY paid_at`,
      [orgId],
    );

  describe('customer.subscription.created', () => {
    it('sets tier, subscription, status and period, links the customer, and records the event', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org, tier: 'team', periodStart: 1_790_000_000, periodEnd: 1_792_592_000 });
      const event = subscriptionEvent('created', sub, { created: 1_790_000_005 });
      const before = (await webhookEvents.get()).values.find(
        (v) => v.labels.type === event.type && v.labels.outcome === 'processed',
      )?.value ?? 0;

      const res = await send(event).expect(200);
      expect(res.body).toEqual({ id: event.id, status: 'processed', reason: null });
      expect(await license(org)).toEqual({
        tier: 'team',
        is_active: true,
        is_expired: false,
        subscription_id: sub.id,
        subscription_status: 'active',
        current_period_start: 1_790_000_000,
        current_period_end: 1_792_592_000,
        past_due_since: null,
        last_event_created: 1_790_000_005,
        last_event_rank: 1,
        deleted: false,
      });
      expect(await customerOf(org)).toBe(sub.customer);
      expect(await ledger(event.id)).toMatchObject({
        type: event.type,
        created: 1_790_000_005,
        livemode: false,
        status: 'processed',
        reason: null,
        organisation_id: org,
        customer_id: sub.customer,
        subscription_id: sub.id,
        attempts: 1,
      });
      // The event as received, byte for byte.
      expect(JSON.parse((await ledger(event.id)).payload)).toEqual(event);

      const after = (await webhookEvents.get()).values.find(
        (v) => v.labels.type === event.type && v.labels.outcome === 'processed',
      )!.value;
      expect(after).toBe(before + 1);
      const line = logLines.map((l) => JSON.parse(l)).find((l) => l.event_id === event.id);
      expect(line).toMatchObject({ level: 30, type: event.type, outcome: 'processed' });
      expect(logLines.join('\n')).not.toMatch(/v1=|whsec_|payprovider-signature/i);
    });

    it('reads the period from the subscription itself in the older API shape', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org, legacy: true, periodStart: 1_700_000_000, periodEnd: 1_702_000_000 });
      expect(sub.items.data[0].current_period_start).toBeUndefined();
      await send(subscriptionEvent('created', sub)).expect(200);
      expect(await license(org)).toMatchObject({ tier: 'pro', current_period_start: 1_700_000_000, current_period_end: 1_702_000_000 });
    });

    it('resolves the tier from a lookup key or the subscription metadata', async () => {
      const a = await newOrg();
      await send(subscriptionEvent('created', subscriptionObject({ organisationId: a, tierSource: 'lookup_key', lookupKey: 'enterprise_yearly' }))).expect(200);
      expect((await license(a)).tier).toBe('enterprise');
      const b = await newOrg();
      await send(subscriptionEvent('created', subscriptionObject({ organisationId: b, tierSource: 'subscription_metadata', tier: 'team' }))).expect(200);
      expect((await license(b)).tier).toBe('team');
    });
  });

  describe('customer.subscription.updated and .deleted', () => {
    it('updates tier and status, then a deletion downgrades to free for good', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org, tier: 'pro' });
      await send(subscriptionEvent('created', sub, { created: 1000 })).expect(200);

      const upgraded = { ...subscriptionObject({ ...sub, organisationId: org, tier: 'team', status: 'past_due', periodStart: 2000, periodEnd: 3000 }), id: sub.id, customer: sub.customer };
      await send(subscriptionEvent('updated', upgraded, { created: 1100 })).expect(200);
      expect(await license(org)).toMatchObject({
        tier: 'team',
        subscription_status: 'past_due',
        past_due_since: 1100,
        current_period_start: 2000,
        last_event_rank: 2,
      });

      const deleted = subscriptionEvent('deleted', upgraded, { created: 1200 });
      expect((await send(deleted).expect(200)).body.status).toBe('processed');
      expect(await license(org)).toMatchObject({
        tier: 'free',
        is_active: true,
        is_expired: false,
        subscription_id: sub.id,
        deleted: true,
        last_event_created: 1200,
        last_event_rank: 3,
      });

      // A late (even newer) event for the deleted subscription id never brings it back.
      const late = subscriptionEvent('updated', upgraded, { created: 1300 });
      const res = await send(late).expect(200);
      expect(res.body).toEqual({ id: late.id, status: 'stale', reason: `subscription ${sub.id} was deleted` });
      expect((await license(org)).tier).toBe('free');
    });

    it('an older event is stale and changes nothing', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org, tier: 'team' });
      await send(subscriptionEvent('updated', sub, { created: 500 })).expect(200);
      const old = subscriptionEvent('created', { ...sub, items: subscriptionObject({ tier: 'pro' }).items }, { created: 400 });
      const res = await send(old).expect(200);
      expect(res.body.status).toBe('stale');
      expect(await license(org)).toMatchObject({ tier: 'team', last_event_created: 500, last_event_rank: 2 });
      expect((await ledger(old.id)).status).toBe('stale');
    });

    it('with two live subscriptions the license follows the best; deleting one keeps the other', async () => {
      const org = await newOrg();
      const customer = providerId('cus');
      const first = subscriptionObject({ organisationId: org, customer, tier: 'team' });
      const second = subscriptionObject({ organisationId: org, customer, tier: 'pro' });
      await send(subscriptionEvent('created', first, { created: 100 })).expect(200);
      await send(subscriptionEvent('created', second, { created: 200 })).expect(200);
      // The newer subscription is of a lower tier: the team one still decides.
      expect((await license(org)).tier).toBe('team');
      // Ending the newer one (the double-billing case) keeps the older one's tier.
      expect((await send(subscriptionEvent('deleted', second, { created: 300 })).expect(200)).body.status).toBe('processed');
      expect(await license(org)).toMatchObject({ tier: 'team', is_active: true, subscription_id: first.id });
      // Events of one subscription are ordered on their own: the first's update of second 250 still applies.
      const update = await send(subscriptionEvent('updated', { ...first, status: 'past_due' }, { created: 250 })).expect(200);
      expect(update.body.status).toBe('processed');
      expect(await license(org)).toMatchObject({ tier: 'team', subscription_status: 'past_due', past_due_since: 250 });
    });
  });

  describe('invoice.payment_succeeded', () => {
    it('records one billing-history entry from today\'s invoice shape', async () => {
      const org = await newOrg();
      const invoice = invoiceObject({ organisationId: org, amountPaid: 4900, currency: 'eur', periodStart: 1_760_000_000, periodEnd: 1_762_592_000, paidAt: 1_760_000_100 });
      const event = invoicePaidEvent(invoice);
      expect((await send(event).expect(200)).body.status).toBe('processed');
      expect(await billing(org)).toEqual([
        {
          invoice_id: invoice.id,
          subscription_id: invoice.parent.subscription_details.subscription,
          amount_paid: 4900,
          currency: 'EUR',
          period_start: 1_760_000_000,
          period_end: 1_762_592_000,
          paid_at: 1_760_000_100,
          hosted_invoice_url: invoice.hosted_invoice_url,
        },
      ]);
      // The same invoice under another event id (e.g. a resend) adds nothing.
      const again = await send(invoicePaidEvent(invoice)).expect(200);
      expect(again.body).toMatchObject({ status: 'processed', reason: `invoice ${invoice.id} was already recorded` });
      expect(await billing(org)).toHaveLength(1);
      expect(await license(org)).toBeUndefined();
    });

    it('reads the older shape (invoice.subscription, no parent) and falls back to created for paid_at', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org });
      await send(subscriptionEvent('created', sub)).expect(200);
      // No metadata anywhere: matched through the subscription the created event linked.
      const invoice = invoiceObject({ legacy: true, subscription: sub.id, customer: providerId('cus'), paidAt: null, created: 1_750_000_000, hostedInvoiceUrl: null });
      expect(invoice.parent).toBeUndefined();
      await send(invoicePaidEvent(invoice)).expect(200);
      expect(await billing(org)).toEqual([
        expect.objectContaining({ invoice_id: invoice.id, subscription_id: sub.id, paid_at: 1_750_000_000, hosted_invoice_url: null, currency: 'USD' }),
      ]);
    });

    it('is matched through the customer record, or by the invoice\'s own metadata', async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org });
      await send(subscriptionEvent('created', sub)).expect(200);
      await send(invoicePaidEvent(invoiceObject({ customer: sub.customer }))).expect(200);
      const other = await newOrg();
      await send(invoicePaidEvent(invoiceObject({ organisationId: other, metadataIn: 'invoice' }))).expect(200);
      expect(await billing(org)).toHaveLength(1);
      expect(await billing(other)).toHaveLength(1);
    });

    it("metadata naming the subscription's organisation in capitals is that organisation; another one is a conflict", async () => {
      const org = await newOrg();
      const sub = subscriptionObject({ organisationId: org });
      await send(subscriptionEvent('created', sub)).expect(200);
      const capitals = invoicePaidEvent(invoiceObject({ organisationId: org.toUpperCase(), customer: sub.customer, subscription: sub.id }));
      expect((await send(capitals).expect(200)).body).toEqual({ id: capitals.id, status: 'processed', reason: null });
      const other = await newOrg();
      const elsewhere = invoicePaidEvent(invoiceObject({ organisationId: other, customer: sub.customer, subscription: sub.id }));
      expect((await send(elsewhere).expect(200)).body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^organisation_conflict: /) });
      expect(await billing(org)).toHaveLength(1);
      expect(await billing(other)).toHaveLength(0);
    });

    it('an invoice without amount_paid → 200, stored failed, nothing recorded', async () => {
      const org = await newOrg();
      const invoice = invoiceObject({ organisationId: org });
      delete invoice.amount_paid;
      const event = invoicePaidEvent(invoice);
      const res = await send(event).expect(200);
      expect(res.body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^invoice_invalid: .*amount_paid/) });
      expect(await ledger(event.id)).toMatchObject({ status: 'failed', reason: expect.stringMatching(/amount_paid/) });
      expect(await billing(org)).toHaveLength(0);
    });
  });

  describe('other outcomes', () => {
    it('other event types → 200, stored ignored', async () => {
      const event = providerEvent('plan.created', { id: 'plan_1', object: 'plan' });
      expect((await send(event).expect(200)).body).toEqual({ id: event.id, status: 'ignored', reason: 'event type plan.created is not handled' });
      expect((await ledger(event.id)).status).toBe('ignored');
    });

    it('a duplicate delivery → 200 duplicate, no second effect, the original outcome kept', async () => {
      const org = await newOrg();
      const event = invoicePaidEvent(invoiceObject({ organisationId: org }));
      await send(event).expect(200);
      const res = await send(event).expect(200);
      expect(res.body).toEqual({ id: event.id, status: 'duplicate', reason: 'already received (processed)' });
      expect(await ledger(event.id)).toMatchObject({ status: 'processed', attempts: 2 });
      expect(await billing(org)).toHaveLength(1);
    });

    it('an unresolvable tier of our organisation → 200, stored failed with the reason, logged at error level', async () => {
      const org = await newOrg();
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'gold' }));
      const res = await send(event).expect(200);
      expect(res.body).toEqual({ id: event.id, status: 'failed', reason: expect.stringMatching(/^tier_unresolvable: .*"gold" is not a configured tier/) });
      expect(await ledger(event.id)).toMatchObject({ status: 'failed', reason: expect.stringMatching(/gold/), attempts: 1 });
      expect((await send(event).expect(200)).body.status).toBe('failed');
      expect(await ledger(event.id)).toMatchObject({ status: 'failed', attempts: 2 });
      expect(await license(org)).toBeUndefined();
      expect(await customerOf(org)).toBeNull();
      const line = logLines.map((l) => JSON.parse(l)).find((l) => l.event_id === event.id);
      expect(line).toMatchObject({ level: 50, outcome: 'failed' });
    });

    it('a paid subscription to the free tier fails the same way', async () => {
      const org = await newOrg();
      const res = await send(subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'free' }))).expect(200);
      expect(res.body.reason).toMatch(/^tier_unresolvable: /);
    });
  });

  describe('organisation matching', () => {
    it('unmatched events are stored, then applied in order when a later event links their customer', async () => {
      const org = await newOrg();
      const customer = providerId('cus');
      const sub = subscriptionObject({ customer, tier: 'pro', periodStart: 5000, periodEnd: 6000 });
      const invoice = invoicePaidEvent(invoiceObject({ customer, subscription: sub.id }), { created: 1001 });
      const created = subscriptionEvent('created', sub, { created: 1000 });
      for (const e of [invoice, created]) {
        const res = await send(e).expect(200);
        expect(res.body).toEqual({ id: e.id, status: 'unmatched', reason: 'no organisation is linked to this customer or subscription yet' });
      }
      expect(await billing(org)).toHaveLength(0);

      // A later event carries the organisation: it links customer and subscription, and the two are applied.
      const linked = { ...sub, metadata: { organisation_id: org }, status: 'trialing' };
      const update = subscriptionEvent('updated', linked, { created: 999 });
      expect((await send(update).expect(200)).body.status).toBe('processed');
      expect((await ledger(invoice.id)).status).toBe('processed');
      expect(await ledger(created.id)).toMatchObject({ status: 'processed', organisation_id: org });
      expect(await billing(org)).toHaveLength(1);
      // created (1000) is newer than the linking update (999), so it decides the license.
      expect(await license(org)).toMatchObject({ tier: 'pro', subscription_status: 'active', last_event_created: 1000, last_event_rank: 1 });
      expect(await customerOf(org)).toBe(customer);
    });

    it('a metadata organisation id that names no organisation is noted; with our tier the event stays unmatched', async () => {
      const bogus = '00000000-0000-4000-8000-000000000000';
      const res = await send(subscriptionEvent('created', subscriptionObject({ organisationId: bogus }))).expect(200);
      expect(res.body).toMatchObject({ status: 'unmatched', reason: `metadata.organisation_id "${bogus}" names no organisation` });
      const res2 = await send(subscriptionEvent('created', subscriptionObject({ organisationId: 'not-a-uuid' }))).expect(200);
      expect(res2.body.status).toBe('unmatched');
    });

    it('metadata never moves a linked customer to another organisation: organisation_conflict, nothing changes', async () => {
      const a = await newOrg();
      const b = await newOrg();
      const customer = providerId('cus');
      await send(subscriptionEvent('created', subscriptionObject({ organisationId: a, customer }))).expect(200);
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: b, customer, tier: 'team' }));
      const res = await send(event).expect(200);
      expect(res.body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^organisation_conflict: /) });
      expect(await customerOf(a)).toBe(customer);
      expect(await customerOf(b)).toBeNull();
      expect(await license(b)).toBeUndefined();
      expect((await license(a)).tier).toBe('pro');
    });

    it('metadata never moves a linked subscription either', async () => {
      const a = await newOrg();
      const b = await newOrg();
      const sub = subscriptionObject({ organisationId: a, tier: 'pro' });
      await send(subscriptionEvent('created', sub, { created: 100 })).expect(200);
      const moved = { ...sub, metadata: { organisation_id: b }, items: subscriptionObject({ tier: 'enterprise' }).items };
      const res = await send(subscriptionEvent('updated', moved, { created: 200 })).expect(200);
      expect(res.body.reason).toMatch(/^organisation_conflict: metadata.organisation_id names .* but the subscription is linked to/);
      expect((await license(a)).tier).toBe('pro');
      expect(await license(b)).toBeUndefined();
    });
  });
});
