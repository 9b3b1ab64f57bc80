import { CreditJobs } from '../src/credits/credit-jobs';
import { CREDITS_TABLE, creditsTiersFile, ledgerMismatches } from './support/credits';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-rollover';

/** The free tier rolls up to 30 unused ai_tokens over (its included amount: 100 a calendar month). */
const TABLE = {
  ...CREDITS_TABLE,
  tiers: { ...CREDITS_TABLE.tiers, free: { ...CREDITS_TABLE.tiers.free, ai_tokens: { limit: 100, overage: 'credits', rollover: { max: 30 } } } },
};

/**
 * Rollover (spec §16.1): the unused included amount of the period before, at most `max`, becomes one promotional
 * grant per organisation, metric and period, effective at the period's start and expiring at its end, whichever
 * instance or job makes it.
 */
describe('credits: rollover', () => {
  let a: TestApp;
  let b: TestApp;
  const env = { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile(TABLE) };

  beforeAll(async () => {
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const now = new Date();
  const monthStart = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  // Read at the database's clock, which decides the period: a run across a month's end is not a case here.
  const usedIn = (org: string, month: Date, used: number, metric = 'ai_tokens') =>
    a.db.query(`INSERT INTO usage_counters (organisation_id, metric, period_start, used) VALUES ($1, $2, $3, $4)`, [org, metric, Math.floor(month.getTime() / 1000), used]);
  const rollovers = async (org: string) =>
    (await a.db.query(
      `SELECT metric, amount, remaining, category, source, reference, effective_at, expires_at FROM credit_grants WHERE organisation_id = $1 AND source = 'rollover'`,
      [org],
    )) as { metric: string; amount: number; remaining: number; effective_at: Date; expires_at: Date; reference: string }[];
  const newOrg = async () => (await createOrganisation(a)).id;

  it('what the previous month left unused, at most max, once, whichever instance makes it', async () => {
    const [some, little, over, dormant] = [await newOrg(), await newOrg(), await newOrg(), await newOrg()];
    await usedIn(some, monthStart(-1), 80);
    await usedIn(little, monthStart(-1), 10);
    await usedIn(over, monthStart(-1), 140);
    // Its last use was two months ago: the month before this one recorded none.
    await usedIn(dormant, monthStart(-2), 0);
    const jobs = [a.app.get(CreditJobs), b.app.get(CreditJobs)];

    const made = await Promise.all([...jobs, ...jobs].map((j) => j.rollOver(some)));
    expect(made.reduce((x, y) => x + y, 0)).toBe(1);
    const period = `rollover:ai_tokens:${monthStart(0).getTime() / 1000}`;
    expect(await rollovers(some)).toEqual([
      {
        metric: 'ai_tokens',
        amount: 20,
        remaining: 20,
        category: 'promotional',
        source: 'rollover',
        reference: period,
        effective_at: monthStart(0),
        expires_at: monthStart(1),
      },
    ]);
    for (const org of [little, over, dormant]) await jobs[0].rollOver(org);
    expect((await rollovers(little)).map((g) => g.amount)).toEqual([30]);
    expect(await rollovers(over)).toEqual([]);
    expect(await rollovers(dormant)).toEqual([]);

    // It counts as any grant: after the included 100, reports draw on it.
    const { body } = await a.http().get('/api/licensing/credits').query({ organisation_id: some }).set('X-Service-Key', KEY).expect(200);
    expect(body.data[0]).toMatchObject({ balance: 20, available: 120, grants: [{ source: 'rollover', amount: 20 }] });
    const entries = await a.db.query(`SELECT kind, amount, reference FROM credit_ledger WHERE organisation_id = $1`, [some]);
    expect(entries).toEqual([{ kind: 'grant', amount: 20, reference: period }]);
    expect(await ledgerMismatches(a, some)).toEqual([]);
  });

  it('made lazily by the first report of the period, which may draw on it; concurrent first reports on two instances make one', async () => {
    const org = await newOrg();
    await usedIn(org, monthStart(-1), 75);
    const report = (t: TestApp, amount: number) =>
      t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount });
    // 100 included + 25 rolled over: ten reports of 12 (120) all fit, whichever comes first.
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => report(i % 2 ? a : b, 12)));
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect((await rollovers(org)).map((g) => [g.amount, g.remaining])).toEqual([[25, 5]]);
    expect((await report(a, 6).expect(402)).body.code).toBe('insufficient_credits');
    expect((await report(b, 5).expect(200)).body).toMatchObject({ used: 125, balance: 0, available: 0 });
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it("the minutely job makes them, on both instances at once, and again makes none; a metric without a rollover or a block metric never", async () => {
    const org = await newOrg();
    await usedIn(org, monthStart(-1), 90);
    await usedIn(org, monthStart(-1), 1, 'gpu_s');
    await usedIn(org, monthStart(-1), 1, 'api_s');
    // Other organisations' candidates may be made meanwhile: count this one's grants.
    await Promise.all([a.app.get(CreditJobs).minutely(), b.app.get(CreditJobs).minutely()]);
    await a.app.get(CreditJobs).minutely();
    await a.app.get(CreditJobs).minutely();
    expect((await rollovers(org)).map((g) => [g.metric, g.amount])).toEqual([['ai_tokens', 10]]);
  });
});

/** pro's ai_tokens as credits: `limit` included a period, up to `max` of it rolled over. */
const proRollingOver = (limit: number, max: number) => ({
  tiers: { ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, ai_tokens: { limit, overage: 'credits', rollover: { max } } } },
});

/**
 * Rollover on plan versions (spec §16.1, §17): a subscription grandfathered on an older version of its tier rolls
 * over what its version says (its included amount and its `max`), not what the newest version says
 * (credits.roll_over reads the subscription's version, migration 1764002420000-RolloverOnPlanVersion).
 */
describe('credits: rollover on a grandfathered plan version', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  let t: TestApp;
  const start = (table: object) =>
    startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: creditsTiersFile(table), SERVICE_API_KEYS: KEY } });

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    database = await createTestDatabase();
    // Version 1 of pro: 1000 included, up to 50 rolled over.
    t = await start(proRollingOver(1000, 50));
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await database.drop();
  });

  it('the old subscriber rolls over by its version (1000 included, at most 50), a new one by the newest (2000, at most 500)', async () => {
    const old = await subscribed(t, fake, { price: 'pro_month' });
    await t.close();
    // Version 2 of pro: 2000 included, up to 500 rolled over.
    t = await start(proRollingOver(2000, 500));
    const fresh = await subscribed(t, fake, { price: 'pro_month' });
    const versions = await t.db.query(
      `SELECT organisation_id, plan_version FROM provider_subscriptions WHERE organisation_id = ANY($1) ORDER BY plan_version`,
      [[old.org.id, fresh.org.id]],
    );
    expect(versions).toEqual([
      { organisation_id: old.org.id, plan_version: 1 },
      { organisation_id: fresh.org.id, plan_version: 2 },
    ]);

    // Both used 900 in the period before their current one.
    for (const s of [old, fresh]) {
      await t.db.query(`INSERT INTO usage_counters (organisation_id, metric, period_start, used) VALUES ($1, 'ai_tokens', $2, 900)`, [s.org.id, s.periodStart - 30 * 86_400]);
    }
    const jobs = t.app.get(CreditJobs);
    expect(await jobs.rollOver(old.org.id)).toBe(1);
    expect(await jobs.rollOver(fresh.org.id)).toBe(1);
    const rolled = async (org: string) =>
      (await t.db.query(`SELECT amount, reference FROM credit_grants WHERE organisation_id = $1 AND source = 'rollover'`, [org])) as { amount: number; reference: string }[];
    expect(await rolled(old.org.id)).toEqual([{ amount: 50, reference: `rollover:ai_tokens:${old.periodStart}` }]);
    expect(await rolled(fresh.org.id)).toEqual([{ amount: 500, reference: `rollover:ai_tokens:${fresh.periodStart}` }]);
    // And the old subscriber's included amount is its version's.
    const { body } = await t.http().get('/api/licensing/credits').query({ organisation_id: old.org.id }).set('X-Service-Key', KEY).expect(200);
    expect(body.data[0]).toMatchObject({ included: { limit: 1000 }, balance: 50 });
  });
});
