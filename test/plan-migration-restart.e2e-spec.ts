import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider, fakeProviderEnv } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { subscriptionObject } from './support/provider-events';
import { getStatus, PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer, waitFor } from './support/server-process';
import { startSubscriptionDouble } from './support/subscribed';

const SUBSCRIPTIONS = 1000;
const MAX_RPS = 40;
const KEY = 'migration-restart-key';
// A run taken over after its instance died: its lease (45 s) runs out, then a minutely step queues it again (a
// wait, not a measure).
const RESUME_TIMEOUT_MS = 10 * 60_000;

jest.setTimeout(2 * PROCESS_TEST_TIMEOUT_MS + 2 * RESUME_TIMEOUT_MS);

/**
 * A plan migration of 1,000 subscriptions (seeded by SQL, each also at the strict double) with a price change, at
 * now, through the built server: stopped cleanly (SIGTERM) in the middle of the run, another server started on the
 * same database takes it over and is killed (SIGKILL) in its turn, and a third takes it over and ends it. Every subscription's price is updated at the provider exactly
 * once, within PROVIDER_SYNC_MAX_RPS in every second, and moved once (its version, its audit entry).
 */
describe('a plan migration of 1,000 subscriptions across a restart', () => {
  let database: TestDatabase;
  let db: Client;
  let fake: FakeProvider;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = new Client({ connectionString: database.url });
    await db.connect();
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await db.end();
    await fake.close();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  const start = async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'migration-restart-')), 'tiers.json');
    writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
    const server = await spawnServer({
      DATABASE_URL: database.url,
      ...fakeProviderEnv(fake, 5000),
      PAYPROVIDER_WEBHOOK_SECRET: 'whsec_migration_restart',
      TIERS_FILE: file,
      PAYPROVIDER_PRICE_PRO: 'pro_month',
      PAYPROVIDER_PRICE_TEAM: 'team_month,team_year',
      SERVICE_API_KEYS: `support:${KEY}`,
      PROVIDER_SYNC_MAX_RPS: String(MAX_RPS),
      LOG_LEVEL: 'warn',
    });
    servers.push(server);
    await server.healthy();
    return server;
  };

  async function seed(): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const periodStart = now - 86_400;
    await db.query(`INSERT INTO organisations (id, name) SELECT md5('org' || i)::uuid, 'Restart Org ' || i FROM generate_series(1, $1) AS i`, [SUBSCRIPTIONS]);
    await db.query(
      `INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id, tier, status, interval, seats, current_period_start, current_period_end, last_event_created)
       SELECT 'sub_restart_' || i, md5('org' || i)::uuid, 'cus_restart_' || i, 'pro', 'active', 'month', 1, $2::bigint, $2::bigint + 30 * 86400, $2::bigint
       FROM generate_series(1, $1) AS i`,
      [SUBSCRIPTIONS, periodStart],
    );
    for (let i = 1; i <= SUBSCRIPTIONS; i++) {
      const customer = fake.addCustomer(`cus_restart_${i}`);
      const sub = subscriptionObject({ id: `sub_restart_${i}`, customer, price: 'pro_month', periodStart, periodEnd: periodStart + 30 * 86_400 });
      sub.items.data[0].price = structuredClone(fake.prices.get('pro_month'));
      sub.automatic_tax = { enabled: false, liability: null };
      sub.schedule = null;
      sub.pending_update = null;
      fake.addSubscription(sub);
    }
    // Version 2 of pro, sold at a new price, as a start with a new table records it.
    await db.query(
      `INSERT INTO plan_versions (tier, version, definition)
       SELECT tier, 2, definition || '{"prices": ["pro_month_2"]}' FROM plan_versions WHERE tier = 'pro' AND version = 1`,
    );
  }

  it('the run resumes on the next server after a clean stop and after a kill, and updates every subscription once', async () => {
    const first = await start();
    await seed();
    fake.requests.length = 0;
    const res = await fetch(`http://127.0.0.1:${first.port}/api/admin/plans/pro/migrations`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Service-Key': KEY },
      body: JSON.stringify({ at: 'now' }),
    });
    expect(res.status).toBe(202);
    const { id, total } = (await res.json()) as { id: string; total: number };
    expect(total).toBe(SUBSCRIPTIONS);
    const done = async () => (await db.query(`SELECT count(*)::int AS n FROM plan_migration_items WHERE migration_id = $1 AND status = 'done'`, [id])).rows[0].n;
    const atLeast = (n: number) => waitFor(`${n} subscriptions to be moved`, async () => ((await done()) >= n ? true : undefined), RESUME_TIMEOUT_MS);
    // Stopped cleanly in the middle of the run (a wait, not a measure): it lets go of the run at once.
    await atLeast(100);
    expect((await first.stop()).code).toBe(0);
    const movedByFirst = await done();
    expect(movedByFirst).toBeLessThan(SUBSCRIPTIONS);

    // The next one takes it over, and is killed in its turn: its lease runs out, and a third one ends the run.
    const second = await start();
    await atLeast(movedByFirst + 100);
    second.child.kill('SIGKILL');
    await second.exited;
    const movedBySecond = (await done()) - movedByFirst;
    expect(movedByFirst + movedBySecond).toBeLessThan(SUBSCRIPTIONS);

    const third = await start();
    const read = async () => {
      const r = await fetch(`http://127.0.0.1:${third.port}/api/admin/plans/migrations/${id}`, { headers: { 'X-Service-Key': KEY } });
      return (await r.json()) as Record<string, any>;
    };
    const final = await waitFor('the migration to end', async () => ((await read()).status !== 'running' ? read() : undefined), RESUME_TIMEOUT_MS);
    expect(final).toMatchObject({ status: 'done', total: SUBSCRIPTIONS, done: SUBSCRIPTIONS, failed: 0, errors: [] });

    // One price update per subscription at the provider, whichever server asked.
    const updates = new Map<string, number>();
    for (const r of fake.requests) {
      if (r.method === 'POST' && r.path.startsWith('/v1/subscriptions/')) updates.set(r.path, (updates.get(r.path) ?? 0) + 1);
    }
    expect(updates.size).toBe(SUBSCRIPTIONS);
    expect([...updates.values()].filter((n) => n !== 1)).toEqual([]);
    expect([...fake.subscriptions.values()].filter((s) => s.items.data[0].price.id !== 'pro_month_2').map((s) => s.id)).toEqual([]);
    expect(fake.busiestSecond()).toBeLessThanOrEqual(MAX_RPS);
    // Moved once each: its version and one audit entry.
    const { rows: versions } = await db.query(`SELECT plan_version, count(*)::int AS n FROM provider_subscriptions GROUP BY 1`);
    expect(versions).toEqual([{ plan_version: 2, n: SUBSCRIPTIONS }]);
    const { rows: audits } = await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT organisation_id)::int AS orgs FROM audit_log WHERE action = 'plan.migrated'`,
    );
    expect(audits).toEqual([{ n: SUBSCRIPTIONS, orgs: SUBSCRIPTIONS }]);
    expect(await getStatus(third.port, '/api/health')).toBe(200);
    console.log(`plan migration restart: ${movedByFirst} of ${SUBSCRIPTIONS} moved before the clean stop, ${movedBySecond} more before the kill`);
  });
});
