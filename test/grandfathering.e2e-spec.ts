import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorBody } from './licensing-fixtures';
import { FakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { subscriptionEvent } from './support/provider-events';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { createTestDatabase, TestDatabase } from './support/databases';
import { createOrganisation, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'grandfathering-key';

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'grandfathering-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

// The second table: pro's projects raised (25 → 40) and api_access moved up to team only; team gains sso; the
// free tier's projects raised (3 → 5).
const RAISED = {
  ...SPEC_PLAN_EXAMPLE,
  free: { ...SPEC_PLAN_EXAMPLE.free, projects: 5 },
  pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 40, features: {} },
  team: { ...SPEC_PLAN_EXAMPLE.team, features: { ...SPEC_PLAN_EXAMPLE.team.features, sso: true } },
};

/**
 * Grandfathering (spec §17): a subscription keeps the plan version newest when it started or last changed tier,
 * and its license comes from it (overrides still win); new subscriptions and tier changes get the newest; the
 * free tier its newest; a price id of an older version still resolves to its tier. The table changes between
 * starts of the service over one database, as an operator's edit of TIERS_FILE does.
 */
describe('plan versions: grandfathering', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let fake: FakeProvider;
  let database: TestDatabase;
  let t: TestApp;
  const start = (table: unknown, env: Record<string, string> = {}) =>
    startSubscriptionApp(fake, {
      databaseUrl: database.url,
      env: { TIERS_FILE: tiersFile(table), SERVICE_API_KEYS: `support:${KEY}`, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret, ...env },
    });
  const asService = { 'X-Service-Key': KEY };
  const entitlements = async (org: string) =>
    (await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(asService).expect(200)).body;
  const explain = async (org: string) => (await t.http().get('/api/licensing/explain').query({ organisation_id: org }).set(asService).expect(200)).body;
  const subscription = async (owner: { auth: Record<string, string> }, org: string) =>
    (await t.http().get('/api/billing/subscription').query({ organisation_id: org }).set(owner.auth).expect(200)).body.subscription;
  const licenseMessages = async (org: string) =>
    ((await t.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 AND type = 'license.updated' ORDER BY version`, [org])) as { body: string }[]).map(
      (m) => JSON.parse(m.body).data,
    );
  const recordedAt = async (tier: string, version: number) =>
    ((await t.db.query(`SELECT created_at FROM plan_versions WHERE tier = $1 AND version = $2`, [tier, version])) as { created_at: Date }[])[0].created_at.toISOString();

  let old: Awaited<ReturnType<typeof subscribed>>;
  let oldOnOldPrice: Awaited<ReturnType<typeof subscribed>>;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
    fake.addPrice('team_month_2', { currency: 'usd', unit_amount: 1200, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
    database = await createTestDatabase();
    t = await start(SPEC_PLAN_EXAMPLE);
    old = await subscribed(t, fake, { price: 'pro_month' });
    oldOnOldPrice = await subscribed(t, fake, { price: 'pro_month' });
    await t.close();
    t = await start(RAISED);
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await receiver.close();
    await database.drop();
  });

  it('after the table changed, the old subscriber keeps its version’s limits and features; a new one gets the newest', async () => {
    expect(await t.db.query(`SELECT tier, max(version) AS newest FROM plan_versions GROUP BY tier ORDER BY tier`)).toEqual([
      { tier: 'free', newest: 2 },
      { tier: 'pro', newest: 2 },
      { tier: 'team', newest: 2 },
    ]);
    const before = await entitlements(old.org.id);
    expect(before).toMatchObject({ tier: 'pro', plan_version: 1, features: { api_access: true, audit_log: false, sso: false } });
    expect(before.limits.projects).toMatchObject({ limit: 25, source: 'tier' });
    expect(await subscription(old.owner, old.org.id)).toMatchObject({ tier: 'pro', plan_version: 1 });
    expect((await explain(old.org.id)).plan_version).toEqual({ version: 1, recorded_at: await recordedAt('pro', 1) });

    const fresh = await subscribed(t, fake, { price: 'pro_month' });
    const now = await entitlements(fresh.org.id);
    expect(now).toMatchObject({ tier: 'pro', plan_version: 2, features: { api_access: false, audit_log: false, sso: false } });
    expect(now.limits.projects).toMatchObject({ limit: 40, source: 'tier' });
    expect(await subscription(fresh.owner, fresh.org.id)).toMatchObject({ tier: 'pro', plan_version: 2 });
    expect((await explain(fresh.org.id)).plan_version).toEqual({ version: 2, recorded_at: await recordedAt('pro', 2) });
    // license.updated carries the version its license comes from.
    expect((await licenseMessages(fresh.org.id)).map((m) => [m.tier, m.plan_version, m.features.api_access])).toEqual([['pro', 2, false]]);
  });

  it('the free tier uses its newest version', async () => {
    const org = (await createOrganisation(t)).id;
    const read = await entitlements(org);
    expect(read).toMatchObject({ tier: 'free', plan_version: 2 });
    expect(read.limits.projects.limit).toBe(5);
    expect((await explain(org)).plan_version).toEqual({ version: 2, recorded_at: await recordedAt('free', 2) });
  });

  it('an override still wins over the old version', async () => {
    const org = oldOnOldPrice.org.id;
    await t.http().put(`/api/admin/organisations/${org}/overrides/projects`).set(asService).send({ value: 60 }).expect(200);
    await t.http().put(`/api/admin/organisations/${org}/overrides/api_access`).set(asService).send({ value: false }).expect(200);
    const read = await entitlements(org);
    expect(read).toMatchObject({ plan_version: 1, features: { api_access: false } });
    expect(read.limits.projects).toMatchObject({ limit: 60, source: 'override' });
    expect(read.limits.ai_tokens.limit).toBe(2_000_000);
    await t.http().delete(`/api/admin/organisations/${org}/overrides/projects`).set(asService).expect(204);
    await t.http().delete(`/api/admin/organisations/${org}/overrides/api_access`).set(asService).expect(204);
    const after = await entitlements(org);
    expect(after.limits.projects).toMatchObject({ limit: 25, source: 'tier' });
    expect(after.features.api_access).toBe(true);
  });

  it('a change of tier through the subscription change route gets the newest version; one back through the portal too', async () => {
    const res = await t.http().post('/api/billing/subscription/change').set(old.owner.auth).send({ organisation_id: old.org.id, tier: 'team' }).expect(200);
    expect(res.body.subscription).toMatchObject({ tier: 'team', plan_version: 2 });
    expect(await entitlements(old.org.id)).toMatchObject({ tier: 'team', plan_version: 2, features: { api_access: true, audit_log: true, sso: true } });
    // The portal: the provider's own event moves it back to pro's price.
    const sub = structuredClone(fake.subscriptions.get(old.subscriptionId)!);
    sub.items.data[0].price = structuredClone(fake.prices.get('pro_month'));
    sub.items.data[0].quantity = 1;
    fake.subscriptions.set(old.subscriptionId, sub);
    await deliver(t.app.getHttpServer(), subscriptionEvent('updated', sub, { created: Math.floor(Date.now() / 1000) + 5 })).expect(200);
    const back = await entitlements(old.org.id);
    expect(back).toMatchObject({ tier: 'pro', plan_version: 2, features: { api_access: false } });
    expect(back.limits.projects.limit).toBe(40);
    expect((await licenseMessages(old.org.id)).map((m) => [m.tier, m.plan_version])).toEqual([
      ['pro', 1],
      ['team', 2],
      ['pro', 2],
    ]);
  });

  it('a price id of an older version still resolves to its tier; the subscription keeps its version', async () => {
    await t.close();
    t = await start(RAISED, { PAYPROVIDER_PRICE_PRO: 'pro_month_2' });
    expect(await t.db.query(`SELECT version, definition -> 'prices' AS prices FROM plan_versions WHERE tier = 'pro' ORDER BY version`)).toEqual([
      { version: 1, prices: ['pro_month'] },
      { version: 2, prices: ['pro_month'] },
      { version: 3, prices: ['pro_month_2'] },
    ]);
    const sub = structuredClone(fake.subscriptions.get(oldOnOldPrice.subscriptionId)!);
    sub.cancel_at_period_end = true;
    fake.subscriptions.set(oldOnOldPrice.subscriptionId, sub);
    const event = subscriptionEvent('updated', sub, { created: Math.floor(Date.now() / 1000) + 5 });
    await deliver(t.app.getHttpServer(), event).expect(200);
    expect(await t.db.query(`SELECT status, reason FROM webhook_events WHERE id = $1`, [event.id])).toEqual([{ status: 'processed', reason: null }]);
    expect(
      await t.db.query(`SELECT tier, tier_source, plan_version, cancel_at_period_end FROM provider_subscriptions WHERE subscription_id = $1`, [oldOnOldPrice.subscriptionId]),
    ).toEqual([{ tier: 'pro', tier_source: 'configured_price', plan_version: 1, cancel_at_period_end: true }]);
    expect((await entitlements(oldOnOldPrice.org.id)).limits.projects.limit).toBe(25);
  });

  it('a change of seats keeps the version’s own price at the provider, in the preview and the change; a change of tier gets the newest price', async () => {
    const team = await subscribed(t, fake, { price: 'team_month', seats: 2 });
    expect(await subscription(team.owner, team.org.id)).toMatchObject({ tier: 'team', plan_version: 2 });
    await t.close();
    t = await start(RAISED, { PAYPROVIDER_PRICE_PRO: 'pro_month_2', PAYPROVIDER_PRICE_TEAM: 'team_month_2,team_year' });
    expect(await t.db.query(`SELECT version, definition -> 'prices' AS prices FROM plan_versions WHERE tier = 'team' AND version >= 2 ORDER BY version`)).toEqual([
      { version: 2, prices: ['team_month', 'team_year'] },
      { version: 3, prices: ['team_month_2', 'team_year'] },
    ]);
    const itemId = team.provider().items.data[0].id;
    const post = (route: string, body: Record<string, unknown>) => t.http().post(`/api/billing/subscription/${route}`).set(team.owner.auth).send(body);

    fake.requests.length = 0;
    const preview = await post('preview', { organisation_id: team.org.id, seats: 3 }).expect(200);
    const previewed = fake.requests.find((r) => r.path === '/v1/invoices/create_preview')!;
    expect(previewed.body.subscription_details).toMatchObject({ items: [{ id: itemId, price: 'team_month', quantity: '3' }] });
    fake.requests.length = 0;
    const changed = await post('change', { organisation_id: team.org.id, seats: 3, proration_date: preview.body.proration_date }).expect(200);
    expect(changed.body.subscription).toMatchObject({ tier: 'team', seats: 3, plan_version: 2 });
    const update = fake.requests.find((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${team.subscriptionId}`)!;
    expect(update.body.items).toEqual([{ id: itemId, price: 'team_month', quantity: '3' }]);
    expect(team.provider().items.data[0].price.id).toBe('team_month');

    // To another tier (pro, at the period's end): the newest version's price.
    fake.requests.length = 0;
    const down = await post('change', { organisation_id: team.org.id, tier: 'pro' }).expect(200);
    expect(down.body.subscription.pending_change).toMatchObject({ tier: 'pro' });
    const phases = fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/subscription_schedules/')).at(-1)!.body.phases as { items: { price: string }[] }[];
    expect(phases.map((p) => p.items[0].price)).toEqual(['team_month', 'pro_month_2']);

    // A change to an interval the subscription's version has no price for: a clear 400, nothing changed.
    fake.requests.length = 0;
    const noYear = await t.http().post('/api/billing/subscription/change').set(oldOnOldPrice.owner.auth).send({ organisation_id: oldOnOldPrice.org.id, interval: 'year' }).expect(400);
    expect(noYear.body).toEqual(errorBody(400, 'price_not_found'));
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/prices/pro_month']);
  });
});
