import { webhookEvents } from '../src/ops/metrics';
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
  const license = async (orgId: string) => {
    const [row] = await t.db.query(
      `SELECT tier, subscription_id, subscription_status, current_period_start, current_period_end,
              last_event_created, last_event_rank FROM licenses WHERE organisation_id = $1`,
      [orgId],
    );
    return row;
  };
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
      const sub = subscriptionObject({ organisationId: org, tier: 'team', periodStart: 1_800_000_000, periodEnd: 1_802_592_000 });
      const event = subscriptionEvent('created', sub, { created: 1_800_000_005 });
      const before = (await webhookEvents.get()).values.find(
        (v) => v.labels.type === event.type && v.labels.outcome === 'processed',
      )?.value ?? 0;

      const res = await send(event).expect(200);
      expect(res.body).toEqual({ id: event.id, status: 'processed', reason: null });
      expect(await license(org)).toEqual({
        tier: 'team',
        subscription_id: sub.id,
        subscription_status: 'active',
        current_period_start: 1_800_000_000,
        current_period_end: 1_802_592_000,
        last_event_created: 1_800_000_005,
        last_event_rank: 1,
      });
      expect(await customerOf(org)).toBe(sub.customer);
      expect(await ledger(event.id)).toMatchObject({
        type: event.type,
        created: 1_800_000_005,
        livemode: false,
        status: 'processed',
        reason: null,
        organisation_id: org,
        customer_id: sub.customer,
        subscription_id: sub.id,
        attempts: 1,
        payload: event,
      });

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
      expect(await license(org)).toMatchObject({ tier: 'team', subscription_status: 'past_due', current_period_start: 2000, last_event_rank: 2 });

      const deleted = subscriptionEvent('deleted', upgraded, { created: 1200 });
      expect((await send(deleted).expect(200)).body.status).toBe('processed');
      expect(await license(org)).toMatchObject({
        tier: 'free',
        subscription_id: sub.id,
        subscription_status: 'canceled',
        current_period_start: null,
        current_period_end: null,
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

    it('a second subscription replaces the first; the first one ending later does not downgrade', async () => {
      const org = await newOrg();
      const customer = providerId('cus');
      const first = subscriptionObject({ organisationId: org, customer, tier: 'pro' });
      const second = subscriptionObject({ organisationId: org, customer, tier: 'team' });
      await send(subscriptionEvent('created', first, { created: 100 })).expect(200);
      await send(subscriptionEvent('created', second, { created: 200 })).expect(200);
      const update = await send(subscriptionEvent('updated', first, { created: 250 })).expect(200);
      expect(update.body).toMatchObject({ status: 'stale', reason: "not the organisation's current subscription" });
      const end = await send(subscriptionEvent('deleted', first, { created: 300 })).expect(200);
      expect(end.body.status).toBe('stale');
      expect(await license(org)).toMatchObject({ tier: 'team', subscription_id: second.id, subscription_status: 'active' });
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

    it('an invoice without amount_paid → 400 and stored failed, nothing recorded', async () => {
      const org = await newOrg();
      const invoice = invoiceObject({ organisationId: org });
      delete invoice.amount_paid;
      const event = invoicePaidEvent(invoice);
      const res = await send(event).expect(400);
      expect(res.body.code).toBe('invoice_invalid');
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

    it('an unresolvable tier → 400, stored failed with the reason; a redelivery tries again', async () => {
      const org = await newOrg();
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'gold' }));
      const res = await send(event).expect(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', code: 'tier_unresolvable', message: expect.stringMatching(/"gold" is not a configured tier/) });
      expect(await ledger(event.id)).toMatchObject({ status: 'failed', reason: expect.stringMatching(/gold/), attempts: 1 });
      await send(event).expect(400);
      expect(await ledger(event.id)).toMatchObject({ status: 'failed', attempts: 2 });
      expect(await license(org)).toBeUndefined();
      expect(await customerOf(org)).toBeNull();
    });

    it('a paid subscription to the free tier is refused the same way', async () => {
      const org = await newOrg();
      const res = await send(subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'free' }))).expect(400);
      expect(res.body.code).toBe('tier_unresolvable');
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

    it('a metadata organisation id that names no organisation is noted and the event stays unmatched', async () => {
      const bogus = '00000000-0000-4000-8000-000000000000';
      const res = await send(subscriptionEvent('created', subscriptionObject({ organisationId: bogus }))).expect(200);
      expect(res.body).toMatchObject({ status: 'unmatched', reason: `metadata.organisation_id "${bogus}" names no organisation` });
      const res2 = await send(subscriptionEvent('created', subscriptionObject({ organisationId: 'not-a-uuid' }))).expect(200);
      expect(res2.body.status).toBe('unmatched');
    });

    it('a customer linked to one organisation is not taken over by another', async () => {
      const a = await newOrg();
      const b = await newOrg();
      const customer = providerId('cus');
      await send(subscriptionEvent('created', subscriptionObject({ organisationId: a, customer }))).expect(200);
      const res = await send(subscriptionEvent('created', subscriptionObject({ organisationId: b, customer, tier: 'team' }))).expect(200);
      expect(res.body).toMatchObject({ status: 'processed', reason: `customer ${customer} stays linked to another organisation` });
      expect(await customerOf(a)).toBe(customer);
      expect(await customerOf(b)).toBeNull();
      expect((await license(b)).tier).toBe('team');
    });
  });
});
