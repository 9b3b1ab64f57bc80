import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FAKE_SECRET_KEY, FakeProvider, startFakeProvider } from './support/fake-provider';
import { invoiceObject, providerEvent, providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { ROOT, runCli } from './support/run-cli';
import { waitFor } from './support/wait-for';
import { TEST_WEBHOOK_SECRET } from './support/test-app';

const PRICE_PRO = 'price_scale_pro';
const DAY = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);

/** What an account looks like to the run: how many of everything, and how many the webhooks missed. */
interface Account {
  subscriptions: number;
  /** Four per subscription that has any: two plan updates (a new period each), each with its paid invoice. */
  events: number;
  /** Of the subscriptions with events, every `missedEvery`-th had all four missed (not in the ledger). */
  missedEvery: number;
  /** Subscriptions (the last ones the provider knows) whose status changed there with no event at all (past_due). */
  drifted: number;
  /** Subscriptions we know that the provider does not (fetched alone: 404). */
  unknownToProvider: number;
}

interface Seeded {
  missedSubscriptions: string[];
  missedInvoices: number;
  driftedSubscriptions: string[];
  /** Where the missed events leave their subscriptions' period. */
  finalPeriodStart: number;
}

/**
 * The account in both places: the provider's side in the double, ours by bulk SQL (as the webhooks left it:
 * delivered events in the ledger with their effect, missed ones neither).
 */
async function seed(fake: FakeProvider, pg: Client, a: Account): Promise<Seeded> {
  const t0 = nowS() - 20 * DAY;
  const orgs: string[] = [];
  const subs: string[] = [];
  const customers: string[] = [];
  const periods: number[] = [];
  const ledger: { id: string; type: string; created: number }[] = [];
  const seeded: Seeded = { missedSubscriptions: [], missedInvoices: 0, driftedSubscriptions: [], finalPeriodStart: t0 + 2 * DAY };
  const withEvents = a.events / 4;
  for (let i = 0; i < a.subscriptions; i++) {
    const [org, sub, customer] = [randomUUID(), providerId('sub'), providerId('cus')];
    const snapshot = (periodStart: number) =>
      subscriptionObject({ id: sub, customer, organisationId: org, tierSource: 'none', price: PRICE_PRO, periodStart });
    let current = snapshot(t0);
    let stored = t0;
    if (i < withEvents) {
      const missed = i % a.missedEvery === 0;
      for (const [k, start] of [t0 + DAY, t0 + 2 * DAY].entries()) {
        current = snapshot(start);
        const update = subscriptionEvent('updated', current, { created: start + k });
        const invoice = providerEvent('invoice.paid', invoiceObject({ organisationId: org, subscription: sub, customer, price: PRICE_PRO, periodStart: start }), {
          created: start + k + 1,
        });
        for (const e of [update, invoice]) {
          fake.addEvent(e);
          if (!missed) ledger.push({ id: e.id, type: e.type, created: e.created });
        }
      }
      if (missed) seeded.missedSubscriptions.push(sub);
      if (missed) seeded.missedInvoices += 2;
      else stored = t0 + 2 * DAY;
    }
    const known = a.subscriptions - a.unknownToProvider;
    if (i >= known - a.drifted && i < known) {
      current = { ...current, status: 'past_due' };
      seeded.driftedSubscriptions.push(sub);
    }
    if (i < known) fake.addSubscription(current);
    orgs.push(org);
    subs.push(sub);
    customers.push(customer);
    periods.push(stored);
  }
  await pg.query(`INSERT INTO organisations (id, name, provider_customer_id) SELECT o, 'Org', c FROM unnest($1::uuid[], $2::text[]) AS x(o, c)`, [
    orgs,
    customers,
  ]);
  await pg.query(
    // As the events applied would have stored them: one seat of the monthly price (subscriptionObject's defaults).
    `INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id, tier, status, current_period_start,
       current_period_end, last_event_created, last_event_rank, seats, interval, cancel_at_period_end, trial_end)
     SELECT s, o, c, 'pro', 'active', p, p + 30 * 86400, p, 2, 1, 'month', false, NULL FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bigint[]) AS x(s, o, c, p)`,
    [subs, orgs, customers, periods],
  );
  await pg.query(
    `INSERT INTO webhook_events (id, type, created, payload, status) SELECT i, t, c, '{}', 'processed' FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(i, t, c)`,
    [ledger.map((e) => e.id), ledger.map((e) => e.type), ledger.map((e) => e.created)],
  );
  return seeded;
}

/** The environment of `provider:sync` run by an operator against the double (default PROVIDER_SYNC_MAX_RPS). */
const cliEnv = (fake: FakeProvider, db: TestDatabase) => ({
  DATABASE_URL: db.url,
  PAYPROVIDER_SECRET_KEY: FAKE_SECRET_KEY,
  PAYPROVIDER_API_URL: fake.url,
  // Above PROVIDER_SYNC_MAX_RPS: the run's own pace is what is measured.
  PAYPROVIDER_MAX_RPS: '100',
  PAYPROVIDER_PRICE_PRO: PRICE_PRO,
  PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
  DATA_DIR: mkdtempSync(join(tmpdir(), 'sync-data-')),
});

/** `provider:sync` as the operator runs it (its own process), with its heap sampled. */
async function syncProcess(fake: FakeProvider, db: TestDatabase) {
  const probe = join(mkdtempSync(join(tmpdir(), 'sync-heap-')), 'heap.json');
  const result = await runCli(['provider:sync'], { ...cliEnv(fake, db), HEAP_PROBE_FILE: probe }, {
    nodeArgs: ['--expose-gc', '-r', join(__dirname, 'support', 'heap-probe.js')],
  });
  if (result.code !== 0) throw new Error(`provider:sync exited ${result.code}: ${result.stderr}`);
  const memory = JSON.parse(readFileSync(probe, 'utf8')) as { peakHeap: number; peakRss: number };
  return { summary: result.json, ...memory, requests: fake.requests.length, busiestSecond: fake.busiestSecond() };
}

/** Issue #32: reconciliation costs pages, not subscriptions, keeps to PROVIDER_SYNC_MAX_RPS and holds a page in memory. */
describe('reconciliation at scale', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeProvider({ prices: [PRICE_PRO] });
  });
  afterAll(() => fake.close());

  /** A database of its own and the account seeded on both sides. */
  async function account(a: Account) {
    fake.reset();
    const db = await createTestDatabase();
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      return { seeded: await seed(fake, pg, a), pg, db };
    } catch (err) {
      await pg.end();
      throw err;
    }
  }

  /** The account, and one run of `provider:sync` over it. */
  async function scenario(a: Account) {
    const seeded = await account(a);
    try {
      return { ...seeded, ...(await syncProcess(fake, seeded.db)) };
    } catch (err) {
      await seeded.pg.end();
      throw err;
    }
  }

  it('5,000 subscriptions and 20,000 events: at most 260 requests, never more than 20 in a second, the memory of 2,000 events', async () => {
    const base = { subscriptions: 5000, missedEvery: 40, drifted: 50, unknownToProvider: 5 };
    const small = await scenario({ ...base, events: 2000 });
    await small.pg.end();
    const large = await scenario({ ...base, events: 20_000 });
    try {
      const { seeded, pg } = large;
      process.stdout.write(
        `provider:sync at 5,000 subscriptions: 2,000 events → ${small.requests} requests, peak heap ${mb(small.peakHeap)}, RSS ${mb(small.peakRss)}; ` +
          `20,000 events → ${large.requests} requests, busiest second ${large.busiestSecond}, peak heap ${mb(large.peakHeap)}, RSS ${mb(large.peakRss)}\n`,
      );
      expect(large.summary).toEqual({
        events_seen: 20_000,
        events_applied: seeded.missedSubscriptions.length * 4,
        subscriptions_checked: 5000,
        subscriptions_corrected: 50,
      });
      // 200 pages of events, 50 of subscriptions, 5 fetched alone.
      expect(large.requests).toBeLessThanOrEqual(260);
      expect(large.busiestSecond).toBeLessThanOrEqual(20);
      expect(large.peakHeap / small.peakHeap).toBeLessThan(1.2);
      expect(small.peakHeap / large.peakHeap).toBeLessThan(1.2);

      // What was missed is applied, the drift corrected, and the spill left empty.
      const period = (await pg.query(`SELECT DISTINCT current_period_start AS p FROM provider_subscriptions WHERE subscription_id = ANY($1)`, [seeded.missedSubscriptions])).rows;
      expect(period.map((r) => Number(r.p))).toEqual([seeded.finalPeriodStart]);
      const invoices = await pg.query(`SELECT count(*)::int AS n FROM billing_history`);
      expect(invoices.rows[0].n).toBe(seeded.missedInvoices);
      const drifted = await pg.query(`SELECT DISTINCT status FROM provider_subscriptions WHERE subscription_id = ANY($1)`, [seeded.driftedSubscriptions]);
      expect(drifted.rows).toEqual([{ status: 'past_due' }]);
      expect((await pg.query(`SELECT count(*)::int AS n FROM provider_sync_spill`)).rows[0].n).toBe(0);
    } finally {
      await large.pg.end();
    }
  }, 240_000);

  it('a run killed part way (SIGKILL) keeps what it applied, and the next run applies the rest once', async () => {
    const { seeded, pg, db } = await account({ subscriptions: 100, events: 400, missedEvery: 1, drifted: 0, unknownToProvider: 0 });
    try {
      const applied = async () => (await pg.query(`SELECT count(*)::int AS n FROM webhook_events WHERE source = 'sync'`)).rows[0].n as number;
      const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'provider:sync'], {
        env: { PATH: process.env.PATH, NODE_ENV: 'test', LOG_LEVEL: 'silent', ...cliEnv(fake, db) },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      await waitFor('the run to apply some events', async () => (await applied()) >= 20, 60_000);
      child.kill('SIGKILL');
      await exited;
      const before = await applied();
      expect(before).toBeLessThan(400);

      fake.requests.length = 0;
      const next = await syncProcess(fake, db);
      expect(next.summary).toMatchObject({ events_seen: 400, subscriptions_checked: 100, subscriptions_corrected: 0 });
      // Those the killed run applied are not applied twice: all 400 exactly once, each invoice once.
      expect(next.summary.events_applied).toBe(400 - before);
      expect(await applied()).toBe(400);
      expect((await pg.query(`SELECT count(*)::int AS n FROM billing_history`)).rows[0].n).toBe(seeded.missedInvoices);
      const periods = await pg.query(`SELECT DISTINCT current_period_start AS p FROM provider_subscriptions`);
      expect(periods.rows.map((r) => Number(r.p))).toEqual([seeded.finalPeriodStart]);
    } finally {
      await pg.end();
    }
  }, 120_000);
});

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
