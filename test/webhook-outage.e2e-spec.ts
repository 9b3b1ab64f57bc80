import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { createTestDatabase } from './support/databases';
import { invoiceObject, invoicePaidEvent } from './support/provider-events';
import { startTcpProxy } from './support/tcp-proxy';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

/**
 * The database going away in the middle of a delivery: the provider gets a quick 5xx, nothing is
 * stored, and its retry of the same event is applied exactly once.
 */
describe('webhook when the database fails mid-delivery', () => {
  let t: TestApp;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  /** A direct connection (not through the proxy) for holding locks and checking what was stored. */
  let direct: Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    proxy = await startTcpProxy(database.url);
    t = await startTestApp({ databaseUrl: proxy.url, env: { DATABASE_STATEMENT_TIMEOUT_MS: '800', DATABASE_QUERY_TIMEOUT_MS: '1000' } });
    direct = new Client({ connectionString: database.url });
    await direct.connect();
  });
  afterAll(async () => {
    proxy.restore();
    await direct.end();
    await t.close();
    await proxy.close();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  const stored = async (eventId: string, org: string) => {
    const { rows } = await direct.query(
      `SELECT (SELECT count(*) FROM webhook_events WHERE id = $1)::int AS events,
              (SELECT count(*) FROM billing_history WHERE organisation_id = $2)::int AS billing`,
      [eventId, org],
    );
    return rows[0];
  };

  /**
   * Holds an uncommitted billing row for the invoice (as a concurrent delivery of the same invoice under
   * another event id would), so the delivery stops at its billing insert: after its ledger insert,
   * mid-transaction.
   */
  async function holdInvoiceMidway(org: string, event: { data: { object: Record<string, any> } }) {
    const blocker = new Client({ connectionString: database.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query(
      `INSERT INTO billing_history (organisation_id, invoice_id, amount_paid, currency, paid_at) VALUES ($1, $2, 0, 'USD', 0)`,
      [org, event.data.object.id],
    );
    return {
      release: async () => {
        await blocker.query('ROLLBACK');
        await blocker.end();
      },
    };
  }

  /** Waits until the app's transaction is stuck at its billing insert (it has inserted its ledger row). */
  async function waitForLockWait() {
    for (let i = 0; i < 100; i++) {
      const { rows } = await direct.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'
         AND application_name = 'billing-licensing-service' AND query LIKE '%INSERT INTO billing_history%'`,
      );
      if (rows[0].n > 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the delivery never reached the database');
  }

  /** The provider retries until it gets a 2xx; a few attempts may still meet a broken pooled connection. */
  async function retryUntilOk(event: object) {
    for (let i = 0; i < 10; i++) {
      const res = await deliver(t.app.getHttpServer(), event);
      if (res.status === 200) return res;
      expect(res.status).toBeGreaterThanOrEqual(500);
    }
    throw new Error('the retry never succeeded');
  }

  it.each([
    ['cut', () => proxy.cut()],
    ['stall', () => proxy.stall()],
  ])('connection %s during a delivery → 5xx quickly, nothing stored; the retry is applied once', async (_name, fail) => {
    await t.http().get('/api/health').expect(200);
    const org = (await createOrganisation(t)).id;
    const event = invoicePaidEvent(invoiceObject({ organisationId: org, customer: `cus_outage_${org}` }));
    const blocker = await holdInvoiceMidway(org, event);

    const pending = deliver(t.app.getHttpServer(), event).then((r) => r);
    await waitForLockWait();
    fail();
    // "Quickly": the answer comes while the blocker still holds its lock (released only below), so it cannot
    // have waited for the database; a hang would fail by this test's timeout. No stopwatch to flake.
    const res = await pending;
    await blocker.release();

    expect(res.status).toBe(503);
    expect(res.body).toEqual({ statusCode: 503, error: 'Service Unavailable', code: 'event_not_stored', message: expect.any(String) });
    expect(JSON.stringify(res.body)).not.toMatch(/ECONN|postgres|timeout|terminat/i);
    expect(await stored(event.id, org)).toEqual({ events: 0, billing: 0 });

    proxy.restore();
    const ok = await retryUntilOk(event);
    expect(ok.body.status).toBe('processed');
    expect(await stored(event.id, org)).toEqual({ events: 1, billing: 1 });
    // One more delivery of the same event: acknowledged, no second effect.
    expect((await deliver(t.app.getHttpServer(), event).expect(200)).body.status).toBe('duplicate');
    expect(await stored(event.id, org)).toEqual({ events: 1, billing: 1 });
  }, 30_000);

  it('a database that answers too slowly → 5xx within the query timeout, nothing stored', async () => {
    const org = (await createOrganisation(t)).id;
    const event = invoicePaidEvent(invoiceObject({ organisationId: org, customer: `cus_outage_${org}` }));
    const blocker = await holdInvoiceMidway(org, event);
    // Answered while the blocker still holds the lock (released only after): the query timeout gave up.
    const res = await deliver(t.app.getHttpServer(), event);
    await blocker.release();
    expect(res.status).toBe(503);
    expect(await stored(event.id, org)).toEqual({ events: 0, billing: 0 });
    expect((await retryUntilOk(event)).body.status).toBe('processed');
  }, 30_000);
});
