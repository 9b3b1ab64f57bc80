import { licenseOf } from './support/license-state';
import { invoiceObject, invoicePaidEvent, providerEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const T = 1_700_000_000;

/**
 * A correctly signed event whose fields have another JSON type than the provider's is stored `failed`
 * (`invalid_event`, naming the field) and changes nothing: no tier, status, period, history entry or
 * customer link (spec §6). Read as absent, `status: ["active"]` used to store a NULL status and drop the
 * license to free.
 */
describe('webhook: signed events with fields of the wrong JSON type', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const send = (event: object) => deliver(t.app.getHttpServer(), event);

  /** Everything an event could change for the organisation. */
  async function state(org: string) {
    return {
      license: await licenseOf(t, org),
      history: await t.db.query(`SELECT invoice_id FROM billing_history WHERE organisation_id = $1 ORDER BY invoice_id`, [org]),
      customer: (await t.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [org]))[0].provider_customer_id,
      subscriptions: await t.db.query(`SELECT * FROM provider_subscriptions WHERE organisation_id = $1`, [org]),
    };
  }

  /** An organisation on pro through a subscription, with one paid invoice. */
  async function paying() {
    const org = (await createOrganisation(t)).id;
    const sub = subscriptionObject({ organisationId: org, tier: 'pro', periodStart: T });
    await send(subscriptionEvent('created', sub, { created: T })).expect(200);
    const invoice = invoiceObject({ organisationId: org, customer: sub.customer, subscription: sub.id, periodStart: T });
    await send(invoicePaidEvent(invoice, { created: T + 1 })).expect(200);
    return { org, sub, invoice };
  }

  type Case = [field: string, event: (p: Awaited<ReturnType<typeof paying>>) => object];
  const update = (sub: Record<string, any>, change: (s: Record<string, any>) => void) => {
    const copy = structuredClone(sub);
    change(copy);
    return subscriptionEvent('updated', copy, { created: T + 10 });
  };
  const paid = (invoice: Record<string, any>, change: (i: Record<string, any>) => void) => {
    const copy = structuredClone(invoice);
    copy.id = `${invoice.id}_2`;
    change(copy);
    return invoicePaidEvent(copy, { created: T + 10 });
  };
  const cases: Case[] = [
    ['status', ({ sub }) => update(sub, (s) => (s.status = ['active']))],
    ['customer', ({ sub }) => update(sub, (s) => (s.customer = 42))],
    ['metadata.organisation_id', ({ sub }) => update(sub, (s) => (s.metadata.organisation_id = { id: 'x' }))],
    ['items.data.0.current_period_end', ({ sub }) => update(sub, (s) => (s.items.data[0].current_period_end = '1800000000'))],
    ['items.data.0.price', ({ sub }) => update(sub, (s) => (s.items.data[0].price = 7))],
    ['items.data.0.price.metadata.tier', ({ sub }) => update(sub, (s) => (s.items.data[0].price.metadata.tier = ['team']))],
    ['items.data', ({ sub }) => update(sub, (s) => (s.items.data = { 0: s.items.data[0] }))],
    ['id', ({ sub }) => update(sub, (s) => (s.id = { object: 'subscription' }))],
    ['amount_paid', ({ invoice }) => paid(invoice, (i) => (i.amount_paid = '2000'))],
    ['currency', ({ invoice }) => paid(invoice, (i) => (i.currency = ['usd']))],
    ['hosted_invoice_url', ({ invoice }) => paid(invoice, (i) => (i.hosted_invoice_url = { href: 'https://x.example' }))],
    ['status_transitions.paid_at', ({ invoice }) => paid(invoice, (i) => (i.status_transitions.paid_at = '1700000005'))],
    ['lines.data', ({ invoice }) => paid(invoice, (i) => (i.lines.data = 'none'))],
    ['lines.data.0.period.start', ({ invoice }) => paid(invoice, (i) => (i.lines.data[0].period.start = 1.5))],
    ['parent.subscription_details.metadata', ({ invoice }) => paid(invoice, (i) => (i.parent.subscription_details.metadata = 'org'))],
    ['id', ({ sub }) => providerEvent('customer.deleted', { id: 7, object: 'customer', metadata: { organisation_id: sub.metadata.organisation_id } })],
  ];

  it.each(cases)('%s of the wrong type → 200, stored failed (invalid_event), nothing changes', async (field, build) => {
    const p = await paying();
    const before = await state(p.org);
    expect(before.license).toMatchObject({ tier: 'pro', is_active: true, subscription_status: 'active' });
    const event = build(p) as { id: string };

    const res = await send(event).expect(200);
    const reason = expect.stringContaining(`invalid_event: data.object.${field}: `);
    expect(res.body).toEqual({ id: event.id, status: 'failed', reason });
    const [row] = await t.db.query(`SELECT status, reason FROM webhook_events WHERE id = $1`, [event.id]);
    expect(row).toEqual({ status: 'failed', reason });
    expect(await state(p.org)).toEqual(before);
  });
});
