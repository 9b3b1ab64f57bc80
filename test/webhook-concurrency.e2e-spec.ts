import { licenseOf } from './support/license-state';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { invoiceObject, invoicePaidEvent, providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { deliver } from './support/webhook-signing';

describe('webhook under concurrency: one effect per event, across instances', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp();
    // A second instance on the same database, as when the service is scaled out.
    b = await startTestApp({ databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const count = async (sql: string, params: unknown[]) => (await a.db.query(sql, params))[0].n;

  it('20 simultaneous deliveries of one invoice event → one billing row, one ledger row', async () => {
    const org = (await createOrganisation(a)).id;
    const event = invoicePaidEvent(invoiceObject({ organisationId: org }));
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => deliver((i % 2 ? a : b).app.getHttpServer(), event)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    const statuses = responses.map((r) => r.body.status).sort();
    expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(19);
    expect(await count(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org])).toBe(1);
    const [row] = await a.db.query(`SELECT status, attempts FROM webhook_events WHERE id = $1`, [event.id]);
    expect(row).toEqual({ status: 'processed', attempts: 20 });
  });

  it('two instances receiving the same subscription events concurrently end in one consistent state', async () => {
    const org = (await createOrganisation(a)).id;
    const sub = subscriptionObject({ organisationId: org, tier: 'pro' });
    const events = [
      subscriptionEvent('created', sub, { created: 100 }),
      subscriptionEvent('updated', { ...sub, items: subscriptionObject({ tier: 'team' }).items }, { created: 200 }),
      invoicePaidEvent(invoiceObject({ subscription: sub.id, customer: sub.customer }), { created: 150 }),
    ];
    // Every event three times to each instance, all at once.
    const deliveries = events.flatMap((e) => [a, b, a, b, a, b].map((inst) => deliver(inst.app.getHttpServer(), e)));
    const responses = await Promise.all(deliveries);
    expect(responses.every((r) => r.status === 200)).toBe(true);
    for (const e of events) {
      const [row] = await a.db.query(`SELECT status, attempts FROM webhook_events WHERE id = $1`, [e.id]);
      expect(row.attempts).toBe(6);
      expect(['processed', 'stale']).toContain(row.status);
    }
    expect(await licenseOf(a, org)).toMatchObject({ tier: 'team', last_event_created: 200 });
    expect(await count(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org])).toBe(1);
  });

  it('concurrent distinct events for one subscription take turns: the newest wins', async () => {
    const org = (await createOrganisation(a)).id;
    const id = providerId('sub');
    const customer = providerId('cus');
    const tiers = ['pro', 'team', 'enterprise'];
    const events = Array.from({ length: 12 }, (_, i) =>
      subscriptionEvent('updated', subscriptionObject({ id, customer, organisationId: org, tier: tiers[i % 3], periodStart: 1000 + i }), { created: 1000 + i }),
    );
    const responses = await Promise.all(events.map((e, i) => deliver((i % 2 ? a : b).app.getHttpServer(), e)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(await licenseOf(a, org)).toMatchObject({ tier: tiers[11 % 3], current_period_start: 1011, last_event_created: 1011 });
  });

  it('an unmatched event racing the event that links its customer is never left behind', async () => {
    const pairs = await Promise.all(
      Array.from({ length: 16 }, async () => ({ org: (await createOrganisation(a)).id, customer: providerId('cus') })),
    );
    const deliveries = pairs.flatMap(({ org, customer }, i) => [
      deliver((i % 2 ? a : b).app.getHttpServer(), invoicePaidEvent(invoiceObject({ customer }))),
      deliver((i % 2 ? b : a).app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org, customer }))),
    ]);
    const responses = await Promise.all(deliveries);
    expect(responses.every((r) => r.status === 200)).toBe(true);
    for (const { org } of pairs) {
      expect(await count(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org])).toBe(1);
    }
    expect(await count(`SELECT count(*)::int AS n FROM webhook_events WHERE status = 'unmatched'`, [])).toBe(0);
  });
});
