import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorBody, setUsage } from './licensing-fixtures';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { cli } from './support/run-cli';
import { TestApp } from './support/test-app';

const KEY = 'plan-admin-key';

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plan-admin-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

// The second table: pro's projects lowered (25 → 20), api_access taken from pro and sso given to it; sold at a new price.
const LOWERED = { ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 20, features: { sso: true } } };

/**
 * GET /api/admin/plans and the migration preview (spec §17) against real subscriptions (signed events from the
 * strict double) over two tables: who would gain and lose which feature, whose limit drops (below their use), and
 * whose price changes, overrides counted; nothing changed; bad input refused in the shared shape.
 */
describe('plan versions: the plans list and the migration preview', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  let t: TestApp;
  const start = (table: unknown, env: Record<string, string> = {}) =>
    startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: tiersFile(table), SERVICE_API_KEYS: `support:${KEY}`, ...env } });
  const asService = { 'X-Service-Key': KEY };
  const preview = (tier: string, body: object = {}, query: Record<string, string | number> = {}) =>
    t.http().post(`/api/admin/plans/${tier}/migrations/preview`).query(query).set(asService).send(body);

  let over: Awaited<ReturnType<typeof subscribed>>;
  let keeps: Awaited<ReturnType<typeof subscribed>>;
  let owner: { auth: Record<string, string> };

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
    database = await createTestDatabase();
    t = await start(SPEC_PLAN_EXAMPLE);
    over = await subscribed(t, fake, { price: 'pro_month' });
    keeps = await subscribed(t, fake, { price: 'pro_month' });
    await subscribed(t, fake, { price: 'team_month', seats: 3 });
    await setUsage(t, over.org.id, 'projects', 22);
    await setUsage(t, keeps.org.id, 'projects', 5);
    await t.http().put(`/api/admin/organisations/${keeps.org.id}/overrides/api_access`).set(asService).send({ value: true }).expect(200);
    await t.close();
    t = await start(LOWERED, { PAYPROVIDER_PRICE_PRO: 'pro_month_2' });
    owner = (await subscribed(t, fake, { price: 'pro_month' })).owner; // a new subscriber: on version 2
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await database.drop();
  });

  it('GET /api/admin/plans lists every tier’s versions with their definitions and live subscriptions', async () => {
    const { body } = await t.http().get('/api/admin/plans').set(asService).expect(200);
    expect(body.data.map((d: any) => [d.tier, d.versions.map((v: any) => [v.version, v.subscriptions])])).toEqual([
      ['free', [[1, 0]]],
      ['pro', [[1, 2], [2, 1]]],
      ['team', [[1, 1]]],
    ]);
    const pro = body.data[1].versions;
    expect(pro[1]).toEqual({
      version: 2,
      created_at: expect.stringMatching(/Z$/),
      subscriptions: 1,
      definition: expect.objectContaining({ limits: { projects: 20, ai_tokens: 2_000_000, users: 10 }, features: { sso: true }, prices: ['pro_month_2'] }),
    });
  });

  it('the CLI: plans:versions lists the same; plans:migrate --preview gives the preview\'s summary', async () => {
    const run = (args: string[]) => cli(args, { DATABASE_URL: database.url }, { app: t.app });
    const versions = await run(['plans:versions']);
    expect(versions.code).toBe(0);
    expect(versions.json).toEqual((await t.http().get('/api/admin/plans').set(asService).expect(200)).body);
    const { body } = await preview('pro').expect(200);
    for (const args of [['plans:migrate', '--tier', 'pro', '--preview'], ['plans:migrate', '--preview', '--tier', 'pro', '--at', 'period_end']]) {
      const res = await run(args);
      expect([args, res.code]).toEqual([args, 0]);
      expect(res.json).toEqual({ subscriptions: 2, summary: body.summary, first: body.data, has_more: false });
    }
    const usage = [
      ['plans:migrate', '--preview'],
      ['plans:migrate', '--tier', 'pro', '--to', 'two', '--preview'],
      ['plans:migrate', '--tier', 'pro', '--from', '0', '--preview'],
      ['plans:migrate', '--tier', 'pro', '--at', 'tomorrow', '--preview'],
    ];
    for (const args of usage) {
      const res = await run(args);
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 2, stdout: '' });
    }
    for (const [args, message] of [
      [['plans:migrate', '--tier', 'free', '--preview'], /no subscriptions to migrate/],
      [['plans:migrate', '--tier', 'pro', '--to', '9', '--preview'], /to_version 9 is not a version of "pro"/],
      [['plans:migrate', '--tier', 'pro', '--from', '2', '--to', '1', '--preview'], /must be newer than from_version/],
    ] as const) {
      const res = await run([...args]);
      expect([args, res.code, res.stderr]).toEqual([args, 1, expect.stringMatching(message)]);
    }
  });

  it('a subscription that ended is not counted', async () => {
    const gone = await subscribed(t, fake, { price: 'team_month', seats: 2 });
    await t.db.query(`UPDATE provider_subscriptions SET status = 'canceled' WHERE subscription_id = $1`, [gone.subscriptionId]);
    const { body } = await t.http().get('/api/admin/plans').set(asService).expect(200);
    expect(body.data[2].versions[0].subscriptions).toBe(1);
  });

  it('the preview: the summary and one row per organisation, an override keeping a feature not lost; nothing changed', async () => {
    const state = () => t.db.query(`SELECT subscription_id, tier, plan_version FROM provider_subscriptions ORDER BY subscription_id`);
    const audits = () => t.db.query(`SELECT count(*)::int AS n FROM audit_log`);
    const [before, auditsBefore] = [await state(), await audits()];
    fake.requests.length = 0;
    const { body } = await preview('pro').expect(200);
    expect(body.subscriptions).toBe(2);
    expect(body.summary).toEqual({
      features_gained: { sso: 2 },
      features_lost: { api_access: 1 },
      limits_lowered: { projects: 2 },
      over_new_limit: { projects: 1 },
      price_changed: 2,
    });
    expect(body.has_more).toBe(false);
    const rows = Object.fromEntries(body.data.map((r: any) => [r.organisation_id, r]));
    expect(body.data.map((r: any) => r.organisation_id)).toEqual([over.org.id, keeps.org.id].sort());
    expect(rows[over.org.id]).toEqual({
      organisation_id: over.org.id,
      external_id: null,
      subscription_id: over.subscriptionId,
      from_version: 1,
      features_gained: ['sso'],
      features_lost: ['api_access'],
      limits: [{ metric: 'projects', from: 25, to: 20, used: 22, over: true }],
      price: { from: ['pro_month'], to: ['pro_month_2'] },
    });
    expect(rows[keeps.org.id]).toMatchObject({ features_gained: ['sso'], features_lost: [], limits: [{ metric: 'projects', from: 25, to: 20, used: 5, over: false }] });
    expect(await state()).toEqual(before);
    expect(await audits()).toEqual(auditsBefore);
    expect(fake.requests).toEqual([]);
  });

  it('an override of a limit is the limit either way: not lowered', async () => {
    await t.http().put(`/api/admin/organisations/${keeps.org.id}/overrides/projects`).set(asService).send({ value: 50 }).expect(200);
    try {
      const { body } = await preview('pro').expect(200);
      expect(body.summary.limits_lowered).toEqual({ projects: 1 });
      expect(body.data.find((r: any) => r.organisation_id === keeps.org.id).limits).toEqual([]);
    } finally {
      await t.http().delete(`/api/admin/organisations/${keeps.org.id}/overrides/projects`).set(asService).expect(204);
    }
  });

  it('pages through organisations with limit and starting_after; from_version and to_version choose the move', async () => {
    const first = (await preview('pro', {}, { limit: 1 }).expect(200)).body;
    expect(first.data).toHaveLength(1);
    expect(first.has_more).toBe(true);
    expect(first.subscriptions).toBe(2);
    const second = (await preview('pro', {}, { limit: 1, starting_after: first.data[0].organisation_id }).expect(200)).body;
    expect(second.data).toHaveLength(1);
    expect(second.has_more).toBe(false);
    expect(second.data[0].organisation_id > first.data[0].organisation_id).toBe(true);
    expect((await preview('pro', { from_version: 1, to_version: 2 }).expect(200)).body.subscriptions).toBe(2);
    // Nothing is older than version 1.
    expect((await preview('pro', { to_version: 1 }).expect(200)).body).toEqual({
      subscriptions: 0,
      summary: { features_gained: {}, features_lost: {}, limits_lowered: {}, over_new_limit: {}, price_changed: 0 },
      data: [],
      has_more: false,
    });
  });

  it('bad input is a clear 400 in the shared shape; a session or no key is refused', async () => {
    const free = await preview('free').expect(400);
    expect(free.body).toEqual(errorBody(400, 'invalid_tier'));
    expect(free.body.message).toMatch(/free tier/);
    expect(free.body.message).toMatch(/no subscriptions/);
    expect((await preview('gold').expect(400)).body).toEqual(errorBody(400, 'invalid_tier'));
    expect((await preview('pro', { to_version: 9 }).expect(400)).body).toEqual(errorBody(400, 'unknown_plan_version'));
    expect((await preview('pro', { from_version: 7 }).expect(400)).body).toEqual(errorBody(400, 'unknown_plan_version'));
    expect((await preview('pro', { from_version: 2, to_version: 1 }).expect(400)).body).toEqual(errorBody(400, 'invalid_version_range'));
    expect((await preview('pro', { from_version: 2, to_version: 2 }).expect(400)).body).toEqual(errorBody(400, 'invalid_version_range'));
    expect((await preview('pro', { from_version: 'one' }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await preview('pro', { at: 'now' }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await preview('pro', {}, { limit: 0 }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await preview('pro', {}, { starting_after: 'x' }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await preview('Pro!').expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    const url = '/api/admin/plans/pro/migrations/preview';
    expect((await t.http().post(url).send({}).expect(401)).body).toEqual(errorBody(401, 'service_key_required'));
    expect((await t.http().post(url).set(owner.auth).send({}).expect(403)).body).toEqual(errorBody(403, 'session_not_accepted'));
    expect((await t.http().get('/api/admin/plans').expect(401)).body).toEqual(errorBody(401, 'service_key_required'));
    expect((await t.http().get('/api/admin/plans').set(owner.auth).expect(403)).body).toEqual(errorBody(403, 'session_not_accepted'));
    expect((await t.http().get('/api/admin/plans').set({ 'X-Service-Key': 'wrong-key' })).status).toBeGreaterThanOrEqual(401);
  });
});
