import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorBody } from './licensing-fixtures';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { subscriptionEvent } from './support/provider-events';
import { cli } from './support/run-cli';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const KEY = 'plan-migrations-key';
const MAX_RPS = 3;

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plan-migrations-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

// The second table: pro's projects lowered and sold at a new price; team sold at new prices.
const RAISED = { ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 20 } };
const recurring = (interval: string) => ({ interval, interval_count: 1, meter: null, usage_type: 'licensed' });

/**
 * Plan migrations (spec §17) against real subscriptions, the strict double through the real SDK, the job queue:
 * at now (the item's price without proration, one request per subscription, paced), at period_end (a schedule's
 * next phase, a pending change kept with the new price; the version in force from the next period), refusals
 * counted, one migration per tier at a time, bad input refused with nothing moved.
 */
describe('plan versions: migrations', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  let receiver: NotificationReceiver;
  let t: TestApp;
  const secret = newNotifySecret();
  const start = (table: unknown, env: Record<string, string> = {}) =>
    startSubscriptionApp(fake, {
      databaseUrl: database.url,
      env: { TIERS_FILE: tiersFile(table), SERVICE_API_KEYS: `support:${KEY}`, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret, PROVIDER_SYNC_MAX_RPS: String(MAX_RPS), ...env },
    });
  const asService = { 'X-Service-Key': KEY };
  const migrate = (tier: string, body: object) => t.http().post(`/api/admin/plans/${tier}/migrations`).set(asService).send(body);
  const read = async (id: string) => (await t.http().get(`/api/admin/plans/migrations/${id}`).set(asService).expect(200)).body;
  const ended = (id: string) =>
    waitFor('the migration to end', async () => ((await read(id)).status !== 'running' ? read(id) : undefined), 120_000).catch(async (err) => {
      console.log(JSON.stringify(await t.db.query(`SELECT task_identifier, attempts, last_error, run_at, locked_at FROM graphile_worker.jobs`), null, 1));
      console.log(JSON.stringify(await t.db.query(`SELECT * FROM plan_migration_items`), null, 1));
      console.log(JSON.stringify(await t.db.query(`SELECT * FROM plan_migrations`), null, 1));
      throw err;
    });
  const versionOf = async (sub: string) =>
    (await t.db.query(`SELECT plan_version, next_plan_version FROM provider_subscriptions WHERE subscription_id = $1`, [sub]))[0];
  const migrated = (org: string) => t.db.query(`SELECT actor, before, after FROM audit_log WHERE organisation_id = $1 AND action = 'plan.migrated'`, [org]);
  const licenseVersions = async (org: string) =>
    ((await t.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 AND type = 'license.updated' ORDER BY version`, [org])) as { body: string }[]).map(
      (r) => (typeof r.body === 'string' ? JSON.parse(r.body) : r.body).data.plan_version,
    );

  let pros: Awaited<ReturnType<typeof subscribed>>[];
  let gone: Awaited<ReturnType<typeof subscribed>>;
  let team: Awaited<ReturnType<typeof subscribed>>;
  let pending: Awaited<ReturnType<typeof subscribed>>;
  let ending: Awaited<ReturnType<typeof subscribed>>;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: recurring('month') });
    fake.addPrice('team_month_2', { currency: 'usd', unit_amount: 1200, recurring: recurring('month') });
    fake.addPrice('team_year_2', { currency: 'usd', unit_amount: 12000, recurring: recurring('year') });
    receiver = await startReceiver(secret);
    database = await createTestDatabase();
    t = await start(SPEC_PLAN_EXAMPLE);
    pros = [await subscribed(t, fake, { price: 'pro_month' }), await subscribed(t, fake, { price: 'pro_month' })];
    gone = await subscribed(t, fake, { price: 'pro_month' });
    team = await subscribed(t, fake, { price: 'team_month', seats: 3 });
    pending = await subscribed(t, fake, { price: 'team_month', seats: 3 });
    // 11.4's downgrade: two seats from the period's end, through a schedule.
    await t.http().post('/api/billing/subscription/change').set(pending.owner.auth).send({ organisation_id: pending.org.id, seats: 2 }).expect(200);
    // One that ends with its period.
    ending = await subscribed(t, fake, { price: 'team_month', seats: 1 });
    await t.http().post('/api/billing/subscription/cancel').set(ending.owner.auth).send({ organisation_id: ending.org.id }).expect(200);
    await t.close();
    t = await start(RAISED, { PAYPROVIDER_PRICE_PRO: 'pro_month_2', PAYPROVIDER_PRICE_TEAM: 'team_month_2,team_year_2' });
    fake.requests.length = 0;
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await fake.close();
    await database.drop();
  });

  it('bad input is a clear 4xx in the shared shape, and nothing is moved, audited or sent to the provider', async () => {
    const audits = async () => (await t.db.query(`SELECT count(*)::int AS n FROM audit_log`))[0].n;
    const before = await audits();
    expect((await migrate('free', { at: 'now' }).expect(400)).body).toEqual(errorBody(400, 'invalid_tier'));
    expect((await migrate('gold', { at: 'now' }).expect(400)).body).toEqual(errorBody(400, 'invalid_tier'));
    expect((await migrate('pro', { at: 'now', to_version: 9 }).expect(400)).body).toEqual(errorBody(400, 'unknown_plan_version'));
    expect((await migrate('pro', { at: 'now', from_version: 2, to_version: 1 }).expect(400)).body).toEqual(errorBody(400, 'invalid_version_range'));
    expect((await migrate('pro', { at: 'tomorrow' }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await migrate('pro', {}).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await t.http().post('/api/admin/plans/pro/migrations').send({ at: 'now' }).expect(401)).body).toEqual(errorBody(401, 'service_key_required'));
    expect((await t.http().post('/api/admin/plans/pro/migrations').set(pros[0].owner.auth).send({ at: 'now' }).expect(403)).body).toEqual(
      errorBody(403, 'session_not_accepted'),
    );
    expect((await t.http().get('/api/admin/plans/migrations/7a1f2c1e-0000-4000-8000-000000000000').set(asService).expect(404)).body).toEqual(
      errorBody(404, 'plan_migration_not_found'),
    );
    expect((await t.http().get('/api/admin/plans/migrations/x').set(asService).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect(await t.db.query(`SELECT count(*)::int AS n FROM plan_migrations`)).toEqual([{ n: 0 }]);
    expect(await audits()).toBe(before);
    expect(fake.requests).toEqual([]);
  });

  it('at now: each subscription’s item moves to the new price without proration, once, paced; its version, license, notice and audit follow; a refusal is counted and left', async () => {
    fake.subscriptions.delete(gone.subscriptionId); // the provider no longer knows it: refused
    fake.hold('/v1/subscriptions/', { method: 'GET' }); // the run waits on its first subscription
    const { body } = await migrate('pro', { at: 'now' }).expect(202);
    expect(body).toEqual({
      id: expect.any(String),
      tier: 'pro',
      from_version: null,
      to_version: 2,
      at: 'now',
      status: 'running',
      total: 3,
      done: 0,
      failed: 0,
      errors: [],
      created_at: expect.stringMatching(/Z$/),
      finished_at: null,
    });
    // One migration per tier at a time.
    expect((await migrate('pro', { at: 'period_end' }).expect(409)).body).toEqual(errorBody(409, 'migration_running'));
    fake.release();
    const final = await ended(body.id);
    expect(final).toMatchObject({ status: 'failed', total: 3, done: 2, failed: 1 });
    expect(final.errors).toEqual([{ subscription_id: gone.subscriptionId, message: expect.stringMatching(/refused/) }]);

    const updates = fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/subscriptions/'));
    expect(updates.map((r) => r.path).sort()).toEqual(pros.map((p) => `/v1/subscriptions/${p.subscriptionId}`).sort());
    for (const [i, p] of pros.entries()) {
      const update = updates.find((r) => r.path.endsWith(p.subscriptionId))!;
      expect(update.body).toEqual({ items: [{ id: p.provider().items.data[0].id, price: 'pro_month_2' }], proration_behavior: 'none' });
      expect(update.headers['idempotency-key']).toBe(`plan-migration:${body.id}:${p.subscriptionId}:update`);
      expect(p.provider().items.data[0].price.id).toBe('pro_month_2');
      expect(await versionOf(p.subscriptionId)).toEqual({ plan_version: 2, next_plan_version: null });
      expect(await migrated(p.org.id)).toEqual([
        {
          actor: 'service_key:support',
          before: { subscription_id: p.subscriptionId, plan_version: 1 },
          after: expect.objectContaining({ plan_version: 2, migration_id: body.id, at: 'now', price: { from: 'pro_month', to: 'pro_month_2' } }),
        },
      ]);
      expect([i, (await licenseVersions(p.org.id)).at(-1)]).toEqual([i, 2]);
      const { body: entitlements } = await t.http().get('/api/licensing/entitlements').query({ organisation_id: p.org.id }).set(asService).expect(200);
      expect(entitlements).toMatchObject({ plan_version: 2, limits: expect.objectContaining({ projects: expect.objectContaining({ limit: 20 }) }) });
    }
    expect(await versionOf(gone.subscriptionId)).toEqual({ plan_version: 1, next_plan_version: null });
    expect(await migrated(gone.org.id)).toEqual([]);
    expect(fake.busiestSecond()).toBeLessThanOrEqual(MAX_RPS);

    // The provider's events for the price update: same tier, so the migrated version stays.
    await fake.deliverEvents();
    for (const p of pros) expect(await versionOf(p.subscriptionId)).toEqual({ plan_version: 2, next_plan_version: null });
  });

  it('at period_end (the CLI): a schedule whose next phase has the new price; a pending change kept with it; the version from the next period', async () => {
    fake.requests.length = 0;
    const res = await cli(['plans:migrate', '--tier', 'team', '--at', 'period_end'], { DATABASE_URL: database.url }, { app: t.app });
    expect([res.code, res.stderr]).toEqual([0, '']);
    expect(res.json).toMatchObject({ tier: 'team', to_version: 2, at: 'period_end', status: 'done', total: 3, done: 3, failed: 0, errors: [] });
    // One that ends with its period has no next period to price: no schedule, its version moved all the same.
    expect(ending.provider().schedule).toBeNull();
    expect(await versionOf(ending.subscriptionId)).toEqual({ plan_version: 1, next_plan_version: 2 });
    const schedule = (s: typeof team) => fake.schedules.get(s.provider().schedule)!;
    const next = (s: typeof team) => schedule(s).phases[1].items[0];
    expect([next(team).price, next(team).quantity]).toEqual(['team_month_2', 3]);
    expect([next(pending).price, next(pending).quantity]).toEqual(['team_month_2', 2]);
    for (const s of [team, pending]) {
      expect(s.provider().items.data[0].price.id).toBe('team_month'); // until the period ends
      expect(await versionOf(s.subscriptionId)).toEqual({ plan_version: 1, next_plan_version: 2 });
      expect(await migrated(s.org.id)).toEqual([expect.objectContaining({ after: expect.objectContaining({ at: 'period_end', effective_at: s.periodEnd }) })]);
    }
    const { body } = await t.http().get('/api/billing/subscription').query({ organisation_id: pending.org.id }).set(pending.owner.auth).expect(200);
    expect(body.subscription.pending_change).toMatchObject({ tier: 'team', seats: 2 });
    expect(fake.busiestSecond()).toBeLessThanOrEqual(MAX_RPS);

    // The renewal: the next period starts at the new price; the version takes over, and the web app is told.
    const renewed = structuredClone(team.provider());
    Object.assign(renewed.items.data[0], { price: structuredClone(fake.prices.get('team_month_2')), current_period_start: team.periodEnd, current_period_end: team.periodEnd + 30 * 86_400 });
    renewed.schedule = null;
    await deliver(t.app.getHttpServer(), subscriptionEvent('updated', renewed, { created: Math.floor(Date.now() / 1000) })).expect(200);
    expect(await versionOf(team.subscriptionId)).toEqual({ plan_version: 2, next_plan_version: null });
    expect((await licenseVersions(team.org.id)).at(-1)).toBe(2);
  });
});

/**
 * Plan migrations over three versions of pro (pro_month, pro_month_2, pro_month_3): `from_version` moves only its
 * own version's subscriptions; a provider outage during a run is tried again and moves each subscription once.
 */
describe('plan versions: migrations over three versions, through an outage', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  let receiver: NotificationReceiver;
  let t: TestApp;
  const secret = newNotifySecret();
  const start = (env: Record<string, string>) =>
    startSubscriptionApp(fake, {
      databaseUrl: database.url,
      env: { SERVICE_API_KEYS: `support:${KEY}`, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret, PROVIDER_SYNC_MAX_RPS: String(MAX_RPS), ...env },
    });
  const asService = { 'X-Service-Key': KEY };
  const read = async (id: string) => (await t.http().get(`/api/admin/plans/migrations/${id}`).set(asService).expect(200)).body;
  const ended = (id: string) => waitFor('the migration to end', async () => ((await read(id)).status !== 'running' ? read(id) : undefined), 120_000);
  const versionOf = async (sub: string) => (await t.db.query(`SELECT plan_version FROM provider_subscriptions WHERE subscription_id = $1`, [sub]))[0].plan_version;
  const migrated = (org: string) => t.db.query(`SELECT after FROM audit_log WHERE organisation_id = $1 AND action = 'plan.migrated'`, [org]);
  const updatesOf = (sub: string) => fake.requests.filter((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${sub}`);

  let first: Awaited<ReturnType<typeof subscribed>>[];
  let second: Awaited<ReturnType<typeof subscribed>>[];

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: recurring('month') });
    fake.addPrice('pro_month_3', { currency: 'usd', unit_amount: 3000, recurring: recurring('month') });
    receiver = await startReceiver(secret);
    database = await createTestDatabase();
    t = await start({});
    first = [await subscribed(t, fake, { price: 'pro_month' }), await subscribed(t, fake, { price: 'pro_month' })];
    await t.close();
    t = await start({ PAYPROVIDER_PRICE_PRO: 'pro_month_2' });
    second = [];
    for (let i = 0; i < 3; i++) {
      const s = await subscribed(t, fake, { price: 'pro_month' });
      s.provider().items.data[0].price = structuredClone(fake.prices.get('pro_month_2')); // sold at version 2's price
      second.push(s);
    }
    await t.close();
    t = await start({ PAYPROVIDER_PRICE_PRO: 'pro_month_3' });
    expect(await t.db.query(`SELECT version, definition -> 'prices' AS prices FROM plan_versions WHERE tier = 'pro' ORDER BY version`)).toEqual([
      { version: 1, prices: ['pro_month'] },
      { version: 2, prices: ['pro_month_2'] },
      { version: 3, prices: ['pro_month_3'] },
    ]);
    fake.requests.length = 0;
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await fake.close();
    await database.drop();
  });

  it('from_version moves only that version’s subscriptions; the others keep their version and price, and nothing is asked about them', async () => {
    const { body } = await t.http().post('/api/admin/plans/pro/migrations').set(asService).send({ from_version: 1, at: 'now' }).expect(202);
    expect(body).toMatchObject({ from_version: 1, to_version: 3, total: 2 });
    expect(await ended(body.id)).toMatchObject({ status: 'done', total: 2, done: 2, failed: 0 });
    for (const s of first) {
      expect(await versionOf(s.subscriptionId)).toBe(3);
      expect(s.provider().items.data[0].price.id).toBe('pro_month_3');
      expect(await migrated(s.org.id)).toEqual([{ after: expect.objectContaining({ plan_version: 3, price: { from: 'pro_month', to: 'pro_month_3' } }) }]);
    }
    for (const s of second) {
      expect(await versionOf(s.subscriptionId)).toBe(2);
      expect(s.provider().items.data[0].price.id).toBe('pro_month_2');
      expect(await migrated(s.org.id)).toEqual([]);
      expect(fake.requests.filter((r) => r.path.includes(s.subscriptionId))).toEqual([]);
    }
  });

  it('a provider outage during the run is tried again: each subscription is moved once', async () => {
    fake.requests.length = 0;
    fake.hold('/v1/subscriptions/', { method: 'GET' }); // the run waits on its first reads of subscriptions
    const { body } = await t.http().post('/api/admin/plans/pro/migrations').set(asService).send({ at: 'now' }).expect(202);
    expect(body).toMatchObject({ from_version: null, to_version: 3, total: 3 });
    await waitFor('the run to read its three subscriptions', async () => (fake.held() === 3 ? true : undefined), 60_000);
    // The provider is unavailable for those three reads and the SDK's two retries of each: each subscription's
    // first try fails, and the run tries it again later.
    fake.failNext(9, { status: 503 });
    fake.release();
    expect(await ended(body.id)).toMatchObject({ status: 'done', total: 3, done: 3, failed: 0, errors: [] });
    expect(await t.db.query(`SELECT attempts FROM plan_migration_items WHERE migration_id = $1`, [body.id])).toEqual(
      second.map(() => ({ attempts: 1 })),
    );
    for (const s of second) {
      // Read again after the outage, then one update: one move recorded.
      expect(fake.requests.filter((r) => r.method === 'GET' && r.path === `/v1/subscriptions/${s.subscriptionId}`)).toHaveLength(4);
      expect(updatesOf(s.subscriptionId).map((r) => r.headers['idempotency-key'])).toEqual([`plan-migration:${body.id}:${s.subscriptionId}:update`]);
      expect(s.provider().items.data[0].price.id).toBe('pro_month_3');
      expect(await versionOf(s.subscriptionId)).toBe(3);
      expect(await migrated(s.org.id)).toEqual([{ after: expect.objectContaining({ plan_version: 3, price: { from: 'pro_month_2', to: 'pro_month_3' } }) }]);
    }
    expect(fake.busiestSecond()).toBeLessThanOrEqual(MAX_RPS);
  });
});
