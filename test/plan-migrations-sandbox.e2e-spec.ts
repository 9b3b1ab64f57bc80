import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, TestDatabase } from './support/databases';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'plan-migrations-sandbox-key';

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plan-migrations-sandbox-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

/**
 * A plan migration in sandbox mode (spec §11.6, §17): the sandbox's prices are its tiers' own, the same in every
 * version, so a migration at now moves the version (and the license) of a subscription bought through the
 * sandbox's checkout with no price change, and the sandbox's subscription keeps its price.
 */
describe('plan versions: a migration in the sandbox', () => {
  let database: TestDatabase;
  let t: TestApp;
  const start = (table: unknown) => startTestApp({ databaseUrl: database.url, env: { TIERS_FILE: tiersFile(table), SERVICE_API_KEYS: `support:${KEY}` } });
  const asService = { 'X-Service-Key': KEY };
  const undelivered = async () => Number((await t.db.query(`SELECT count(*)::int AS n FROM sandbox_events WHERE delivered_at IS NULL`))[0].n);
  const settled = () => waitFor('the sandbox events delivered', async () => ((await undelivered()) === 0 ? true : undefined));

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  it('at now: the version and license move, the price stays the sandbox’s own', async () => {
    t = await start(SPEC_PLAN_EXAMPLE);
    const org = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'pro' }).expect(201);
    await t.http().post(`${new URL(checkout.body.url).pathname}/pay`).type('form').send('').expect(303);
    await settled();
    const subscriptionId = (await t.db.query(`SELECT subscription_id FROM provider_subscriptions WHERE organisation_id = $1`, [org]))[0].subscription_id;
    await t.close();

    t = await start({ ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 20 } });
    const entitlements = async () => (await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(asService).expect(200)).body;
    expect(await entitlements()).toMatchObject({ tier: 'pro', plan_version: 1, limits: expect.objectContaining({ projects: expect.objectContaining({ limit: 25 }) }) });
    const { body } = await t.http().post('/api/admin/plans/pro/migrations').set(asService).send({ at: 'now' }).expect(202);
    const final = await waitFor('the migration to end', async () => {
      const read = (await t.http().get(`/api/admin/plans/migrations/${body.id}`).set(asService).expect(200)).body;
      return read.status === 'running' ? undefined : read;
    });
    expect(final).toMatchObject({ status: 'done', total: 1, done: 1, failed: 0, errors: [] });
    expect(await entitlements()).toMatchObject({ tier: 'pro', plan_version: 2, limits: expect.objectContaining({ projects: expect.objectContaining({ limit: 20 }) }) });
    expect(await t.db.query(`SELECT after FROM audit_log WHERE organisation_id = $1 AND action = 'plan.migrated'`, [org])).toEqual([
      { after: expect.objectContaining({ subscription_id: subscriptionId, plan_version: 2, at: 'now', price: null }) },
    ]);
    const read = (await t.http().get('/api/billing/subscription').query({ organisation_id: org }).set(owner.auth).expect(200)).body.subscription;
    expect(read).toMatchObject({ tier: 'pro', plan_version: 2, interval: 'month', seats: 1, pending_change: null });
    expect(await t.db.query(`SELECT tier, interval, quantity FROM sandbox_subscriptions WHERE id = $1`, [subscriptionId])).toEqual([{ tier: 'pro', interval: 'month', quantity: 1 }]);
  });
});
