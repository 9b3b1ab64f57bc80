import { Client } from 'pg';
import { licenseOf } from './support/license-state';
import { invoiceObject, invoicePaidEvent, providerEvent, providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

/**
 * The ledger row of a new event is written once, with its outcome (not inserted as `failed` and updated).
 * Its claim reads the ledger once the event's locks are held: a delivery that waited for them while another
 * delivery of the same event committed finds the row, so the event has one effect and the provider is not
 * asked about a duplicate.
 */
describe('webhook ledger: one write per new event', () => {
  let t: TestApp;
  let holder: Client;
  beforeAll(async () => {
    t = await startTestApp();
    holder = new Client({ connectionString: t.databaseUrl });
    await holder.connect();
    // Every UPDATE of a ledger row, by event id (a rolled-back one leaves nothing).
    await t.db.query(`CREATE TABLE test_ledger_updates (id text NOT NULL)`);
    await t.db.query(`CREATE FUNCTION test_ledger_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_ledger_updates VALUES (NEW.id); RETURN NEW; END $$`);
    await t.db.query(`CREATE TRIGGER test_ledger_update AFTER UPDATE ON webhook_events FOR EACH ROW EXECUTE FUNCTION test_ledger_update()`);
  });
  afterAll(async () => {
    await holder.end();
    await t.close();
  });

  const server = () => t.app.getHttpServer();
  const updatesOf = async (id: string) => (await t.db.query(`SELECT count(*)::int AS n FROM test_ledger_updates WHERE id = $1`, [id]))[0].n;
  const ledgerRow = async (id: string) =>
    (await t.db.query(`SELECT status, attempts, organisation_id, processed_at IS NOT NULL AS processed FROM webhook_events WHERE id = $1`, [id]))[0];

  async function subscribed(created = 100) {
    const org = (await createOrganisation(t)).id;
    const sub = subscriptionObject({ organisationId: org, tier: 'pro' });
    await deliver(server(), subscriptionEvent('created', sub, { created })).expect(200);
    return { org, sub };
  }

  /**
   * Delivers `event` twice at once while a test connection holds the advisory lock of `lockedId` (as a
   * delivery in progress would): both deliveries wait for the event's locks at once, then the lock goes.
   */
  async function twiceWhileLocked(event: object, lockedId: string) {
    await holder.query('BEGIN');
    await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook:${lockedId}`]);
    const deliveries = [deliver(server(), event).then((r) => r), deliver(server(), event).then((r) => r)];
    // Wait until both are blocked on the event's locks.
    for (;;) {
      const [{ n }] = (
        await holder.query(
          `SELECT count(*)::int AS n FROM pg_locks
           WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        )
      ).rows;
      if (n === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await holder.query('COMMIT');
    return Promise.all(deliveries);
  }

  it('writes each new event once with its outcome, whatever the outcome', async () => {
    const org = (await createOrganisation(t)).id;
    const customer = providerId('cus');
    const sub = subscriptionObject({ organisationId: org, customer, tier: 'pro' });
    const now = Math.floor(Date.now() / 1000);
    const events = {
      processed: subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'team' })),
      ignored: providerEvent('charge.refunded', { id: providerId('ch'), object: 'charge' }),
      unmatched: invoicePaidEvent(invoiceObject({ customer, subscription: sub.id })),
      failed: subscriptionEvent('updated', subscriptionObject({ organisationId: org }), { created: now + 3600 }),
    };
    for (const [status, event] of Object.entries(events)) {
      const res = await deliver(server(), event).expect(200);
      expect(res.body.status).toBe(status);
      expect(await ledgerRow(event.id)).toMatchObject({ status, attempts: 1, processed: true });
      expect(await updatesOf(event.id)).toBe(0);
    }

    // The event that links the customer: written once itself; the waiting invoice's row is then updated.
    const linking = subscriptionEvent('created', sub);
    expect((await deliver(server(), linking).expect(200)).body.status).toBe('processed');
    expect(await updatesOf(linking.id)).toBe(0);
    expect(await ledgerRow(events.unmatched.id)).toMatchObject({ status: 'processed', organisation_id: org });
    expect(await updatesOf(events.unmatched.id)).toBe(1);

    // A redelivery only counts itself.
    const again = await deliver(server(), events.processed).expect(200);
    expect(again.body).toMatchObject({ status: 'duplicate', reason: 'already received (processed)' });
    expect(await ledgerRow(events.processed.id)).toMatchObject({ status: 'processed', attempts: 2 });
    expect(await updatesOf(events.processed.id)).toBe(1);
  });

  it('two deliveries of one update racing past the claim: applied once, the other answered duplicate, the provider not asked', async () => {
    const { org, sub } = await subscribed(100);
    const update = subscriptionEvent('updated', { ...sub, items: subscriptionObject({ tier: 'team' }).items }, { created: 200 });
    // The second delivery finds the subscription at this very event (a tie with itself). Asking the sandbox
    // provider about this hand-made subscription would fail the delivery (503).
    const responses = await twiceWhileLocked(update, sub.id);
    expect(responses.map((r) => r.status)).toEqual([200, 200]);
    expect(responses.map((r) => r.body.status).sort()).toEqual(['duplicate', 'processed']);
    expect(await ledgerRow(update.id)).toMatchObject({ status: 'processed', attempts: 2 });
    expect(await updatesOf(update.id)).toBe(1); // the counted redelivery; the lost attempt rolled back
    expect(await licenseOf(t, org)).toMatchObject({ tier: 'team', last_event_created: 200 });
  });

  it('two deliveries of one invoice racing past the claim: one billing entry', async () => {
    const { org, sub } = await subscribed();
    const invoice = invoicePaidEvent(invoiceObject({ organisationId: org, customer: sub.customer, subscription: sub.id }));
    const responses = await twiceWhileLocked(invoice, sub.id);
    expect(responses.map((r) => r.body.status).sort()).toEqual(['duplicate', 'processed']);
    expect(await ledgerRow(invoice.id)).toMatchObject({ status: 'processed', attempts: 2 });
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org]);
    expect(n).toBe(1);
  });
});
