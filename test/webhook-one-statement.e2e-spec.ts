import { randomBytes } from 'node:crypto';
import { InvoicePaidHandler, InvoicePaymentSucceededHandler } from '../src/webhook/paid-invoice.handlers';
import { SubscriptionCreatedHandler, SubscriptionDeletedHandler, SubscriptionUpdatedHandler } from '../src/webhook/subscription.handlers';
import { EventHandler } from '../src/webhook/event-handler';
import { invoiceObject, invoicePaidEvent, providerEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

/**
 * A new event's common case runs as one statement with its ledger row (`inOneStatement`), beside the
 * general path (`handle`) that decides the same in TypeScript. Each scenario runs twice on fresh
 * organisations, once with the one-statement path switched off and once on, and must leave the same
 * ledger rows, subscriptions, billing history and customer links; with it on, the common cases never reach
 * `handle`.
 */
describe('webhook: the one-statement path does what the general path does', () => {
  let t: TestApp;
  let handlers: EventHandler[];
  beforeAll(async () => {
    t = await startTestApp();
    handlers = [
      SubscriptionCreatedHandler,
      SubscriptionUpdatedHandler,
      SubscriptionDeletedHandler,
      InvoicePaidHandler,
      InvoicePaymentSucceededHandler,
    ].map((type) => t.app.get<EventHandler>(type));
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(() => t.close());

  /** Per run: the organisations and provider ids a scenario uses, by name, so that the two runs compare. */
  interface Run {
    org: string;
    other: string;
    id(name: string): string;
  }
  type Scenario = (r: Run) => object[];

  const T = 1_700_000_000; // events dated in the past, one second apart where it matters
  const sub = (r: Run, o: Record<string, unknown> = {}) =>
    subscriptionObject({ id: r.id('sub'), customer: r.id('cus'), organisationId: r.org, periodStart: T, ...o });
  const invoice = (r: Run, name: string, o: Record<string, unknown> = {}) =>
    invoiceObject({ id: r.id(name), customer: r.id('cus'), subscription: r.id('sub'), periodStart: T, ...o });
  const created = (r: Run) => subscriptionEvent('created', sub(r), { id: r.id('evt_created'), created: T });

  const scenarios: Record<string, Scenario> = {
    'an invoice, then the same invoice again by its other event type': (r) => [
      created(r),
      invoicePaidEvent(invoice(r, 'in1'), { id: r.id('e1'), created: T + 1 }),
      providerEvent('invoice.paid', invoice(r, 'in1'), { id: r.id('e2'), created: T + 2 }),
      invoicePaidEvent(invoice(r, 'in2', { organisationId: r.org, amountPaid: 4100, currency: 'eur' }), { id: r.id('e3'), created: T + 3 }),
    ],
    'invoices whose metadata names the organisation in capitals, another one, or something that is no id': (r) => [
      created(r),
      invoicePaidEvent(invoice(r, 'in1', { organisationId: r.org.toUpperCase() }), { id: r.id('e1'), created: T + 1 }),
      invoicePaidEvent(invoice(r, 'in2', { organisationId: r.other }), { id: r.id('e2'), created: T + 2 }),
      invoicePaidEvent(invoice(r, 'in3', { organisationId: 'acme' }), { id: r.id('e3'), created: T + 3 }),
      invoicePaidEvent(invoice(r, 'in4', { organisationId: r.org, metadataIn: 'invoice', hostedInvoiceUrl: 'javascript:alert(1)' }), {
        id: r.id('e4'),
        created: T + 4,
      }),
    ],
    'updates in order, a past_due streak, a stale one, the same second with a higher rank': (r) => [
      created(r),
      subscriptionEvent('updated', sub(r, { tier: 'team' }), { id: r.id('u1'), created: T }),
      subscriptionEvent('updated', sub(r, { tier: 'team', status: 'past_due' }), { id: r.id('u2'), created: T + 10 }),
      subscriptionEvent('updated', sub(r, { tier: 'team', status: 'past_due' }), { id: r.id('u3'), created: T + 20 }),
      subscriptionEvent('updated', sub(r, { tier: 'pro', status: 'active' }), { id: r.id('u4'), created: T + 5 }),
      subscriptionEvent('updated', sub(r, { tier: 'pro', status: 'active' }), { id: r.id('u5'), created: T + 30 }),
      subscriptionEvent('updated', sub(r, { tier: 'pro', status: 'past_due' }), { id: r.id('u6'), created: T + 40 }),
      subscriptionEvent('created', sub(r, { tier: 'team' }), { id: r.id('c2'), created: T + 40 }),
      subscriptionEvent('updated', sub(r, { tier: 'enterprise', periodStart: T + 50 }), { id: r.id('u7'), created: T + 50 }),
    ],
    'an update with no tier of ours, or one naming another organisation, or another customer': (r) => [
      created(r),
      subscriptionEvent('updated', sub(r, { tierSource: 'none' }), { id: r.id('u1'), created: T + 1 }),
      subscriptionEvent('updated', sub(r, { organisationId: r.other }), { id: r.id('u2'), created: T + 2 }),
      subscriptionEvent('updated', sub(r, { customer: r.id('cus2'), tier: 'team' }), { id: r.id('u3'), created: T + 3 }),
      subscriptionEvent('updated', sub(r, { organisationId: 'acme', tier: 'enterprise' }), { id: r.id('u4'), created: T + 4 }),
    ],
    'a deletion, then an update and an invoice after it': (r) => [
      created(r),
      subscriptionEvent('deleted', sub(r, { tierSource: 'none' }), { id: r.id('d1'), created: T + 10 }),
      subscriptionEvent('updated', sub(r, { tier: 'team' }), { id: r.id('u1'), created: T + 20 }),
      subscriptionEvent('deleted', sub(r), { id: r.id('d2'), created: T + 30 }),
      invoicePaidEvent(invoice(r, 'in1'), { id: r.id('e1'), created: T + 40 }),
    ],
    'an invoice that waits for its subscription, then updates and invoices': (r) => [
      invoicePaidEvent(invoice(r, 'in1'), { id: r.id('e1'), created: T - 5 }),
      created(r),
      subscriptionEvent('updated', sub(r, { tier: 'team' }), { id: r.id('u1'), created: T + 1 }),
      invoicePaidEvent(invoice(r, 'in2'), { id: r.id('e2'), created: T + 2 }),
    ],
    'a redelivery, and an event dated in the future': (r) => {
      const update = subscriptionEvent('updated', sub(r, { tier: 'team' }), { id: r.id('u1'), created: T + 1 });
      return [
        created(r),
        update,
        update,
        subscriptionEvent('updated', sub(r, { tier: 'enterprise' }), { id: r.id('u2'), created: Math.floor(Date.now() / 1000) + 3600 }),
      ];
    },
  };

  async function runScenario(scenario: Scenario, oneStatement: boolean) {
    const names = new Map<string, string>();
    const r: Run = {
      org: (await createOrganisation(t)).id,
      other: (await createOrganisation(t)).id,
      id: (name) => {
        if (!names.has(name)) names.set(name, `${name}_${randomBytes(8).toString('hex')}`);
        return names.get(name)!;
      },
    };
    names.set('ORG', r.org);
    names.set('OTHER', r.other);
    const general = handlers.map((h) => jest.spyOn(h, 'handle'));
    const atOnce = handlers.map((h) => (oneStatement ? jest.spyOn(h, 'inOneStatement') : jest.spyOn(h, 'inOneStatement').mockReturnValue(undefined)));
    const answers = [];
    for (const event of scenario(r)) answers.push((await deliver(t.app.getHttpServer(), event).expect(200)).body);
    const handled = general.reduce((n, spy) => n + spy.mock.calls.length, 0);
    const offered = atOnce.reduce((n, spy) => n + spy.mock.calls.length, 0);
    jest.restoreAllMocks();

    // Everything the events left, with this run's ids and organisations replaced by their names.
    const ids = [...names.keys()].filter((n) => n !== 'ORG' && n !== 'OTHER').map((n) => names.get(n));
    const state = {
      answers,
      ledger: await t.db.query(
        `SELECT id, status, reason, organisation_id, customer_id, subscription_id, attempts, processed_at IS NOT NULL AS processed
         FROM webhook_events WHERE id = ANY($1) ORDER BY received_at, id`,
        [ids],
      ),
      subscriptions: await t.db.query(
        `SELECT subscription_id, organisation_id, customer_id, tier, status, current_period_start, current_period_end, past_due_since,
                last_event_created, last_event_rank, deleted_event_created
         FROM provider_subscriptions WHERE organisation_id = ANY($1) ORDER BY subscription_id`,
        [[r.org, r.other]],
      ),
      history: await t.db.query(
        `SELECT organisation_id, invoice_id, subscription_id, amount_paid, currency, period_start, period_end, paid_at, hosted_invoice_url
         FROM billing_history WHERE organisation_id = ANY($1) ORDER BY invoice_id`,
        [[r.org, r.other]],
      ),
      customers: await t.db.query(`SELECT id, provider_customer_id FROM organisations WHERE id = ANY($1) ORDER BY id = $2 DESC`, [
        [r.org, r.other],
        r.org,
      ]),
    };
    let text = JSON.stringify(state);
    for (const [name, value] of names) text = text.split(value).join(name).split(value.toUpperCase()).join(`${name}_UPPER`);
    const normalised = JSON.parse(text);
    // Invoice ids differ between runs: order their entries by name.
    normalised.history.sort((a: { invoice_id: string }, b: { invoice_id: string }) => a.invoice_id.localeCompare(b.invoice_id));
    return { state: normalised, handled, offered };
  }

  for (const [name, scenario] of Object.entries(scenarios)) {
    it(name, async () => {
      const general = await runScenario(scenario, false);
      const oneStatement = await runScenario(scenario, true);
      expect(oneStatement.state).toEqual(general.state);
      expect(general.state.ledger.length).toBeGreaterThan(0);
      // Switched on, the handlers were offered every new event, and `handle` ran only where it was not their case.
      expect(oneStatement.offered).toBeGreaterThan(0);
      expect(oneStatement.handled).toBeLessThanOrEqual(general.handled);
    });
  }

  it('the common cases never reach handle: an invoice and updates of a stored subscription are one statement each', async () => {
    const run = await runScenario(
      (r) => [
        created(r),
        invoicePaidEvent(invoice(r, 'in1'), { id: r.id('e1'), created: T + 1 }),
        subscriptionEvent('updated', sub(r, { tier: 'team' }), { id: r.id('u1'), created: T + 2 }),
        subscriptionEvent('updated', sub(r, { tier: 'pro', status: 'past_due' }), { id: r.id('u2'), created: T + 3 }),
        providerEvent('invoice.paid', invoice(r, 'in1'), { id: r.id('e2'), created: T + 4 }),
        subscriptionEvent('deleted', sub(r), { id: r.id('d1'), created: T + 5 }),
      ],
      true,
    );
    // Only the first event (the subscription is not stored yet) takes the general path.
    expect(run.handled).toBe(1);
    expect(run.state.ledger.map((e: { status: string }) => e.status)).toEqual(Array(6).fill('processed'));
    expect(run.state.history).toHaveLength(1);
    expect(run.state.subscriptions[0]).toMatchObject({ status: 'canceled', deleted_event_created: T + 5 });
  });
});
