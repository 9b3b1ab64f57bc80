import { CreditJobs } from '../src/credits/credit-jobs';
import { CreditsService } from '../src/credits/credits.service';
import { transaction } from '../src/database/transaction';
import { CREDITS_TABLE, creditsTiersFile, giveCredits } from './support/credits';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'svc-key-credits-alerts';

/** The free tier rolls up to 30 unused ai_tokens over (its included amount: 100 a calendar month). */
const TABLE = {
  ...CREDITS_TABLE,
  tiers: { ...CREDITS_TABLE.tiers, free: { ...CREDITS_TABLE.tiers.free, ai_tokens: { limit: 100, overage: 'credits', rollover: { max: 30 } } } },
};

/**
 * Spend alerts (spec §16.4): `usage.threshold` once per organisation, metric, threshold and period, and
 * `credits.low` once each time `available` falls below its low threshold after being above it, written by the
 * usage write in its statement (single reports, batches, holds and commits), exactly once under concurrency on two
 * instances; `credits.granted` on every grant (an operator's, a rollover).
 */
describe('credits: spend alerts', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    // ai_tokens: 100 included a calendar month (free), then credits; thresholds past the limit too.
    const env = { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile(TABLE), NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret, USAGE_ALERT_THRESHOLDS: '150,50,80,100' };
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await receiver.close();
  });

  const on = (i: number) => (i % 2 ? a : b);
  const report = (t: TestApp, org: string, amount: number, metric = 'ai_tokens') =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric, amount });
  const reserve = (t: TestApp, org: string, amount: number) =>
    t.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount });
  const commit = (t: TestApp, id: string, amount: number) => t.http().post(`/api/licensing/usage/reservations/${id}/commit`).set('X-Service-Key', KEY).send({ amount });
  /** The organisation's messages of `type`, in version order: their data without the license fields. */
  const messages = async (org: string, type: string) =>
    ((await a.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 AND type = $2 ORDER BY version`, [org, type])) as { body: string }[]).map(
      (m) => {
        const { organisation_id: _o, external_id: _e, tier: _t, is_active: _a, is_expired: _x, version: _v, ...data } = JSON.parse(m.body).data;
        return data;
      },
    );
  const thresholds = async (org: string) => (await messages(org, 'usage.threshold')).map((d) => [d.threshold, d.used]);
  const lows = async (org: string) => (await messages(org, 'credits.low')).map((d) => [d.available, d.threshold]);
  const now = new Date();
  const periodStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000;

  it('usage.threshold: each threshold once per period, when used first reaches it; a report past several sends each; past the included limit too', async () => {
    const org = (await createOrganisation(a)).id;
    await giveCredits(a, org, 100);
    await report(a, org, 40).expect(200);
    expect(await thresholds(org)).toEqual([]);
    await report(b, org, 45).expect(200);
    expect(await thresholds(org)).toEqual([
      [50, 85],
      [80, 85],
    ]);
    await report(a, org, 14).expect(200);
    await report(a, org, 1).expect(200);
    await report(b, org, 60).expect(200);
    await report(b, org, 10).expect(200);
    expect(await thresholds(org)).toEqual([
      [50, 85],
      [80, 85],
      [100, 100],
      [150, 160],
    ]);
    expect((await messages(org, 'usage.threshold'))[2]).toEqual({ metric: 'ai_tokens', threshold: 100, used: 100, limit: 100, period_start: periodStart });

    // What a receiver gets, signed: the license fields first, then the alert's.
    const received = await waitFor('four usage.threshold', () => {
      const got = receiver.accepted(org).filter((m) => m.json.type === 'usage.threshold');
      return got.length >= 4 && got;
    });
    expect(received.map((m) => m.json.data.threshold).sort((x: number, y: number) => x - y)).toEqual([50, 80, 100, 150]);
    expect(received.find((m) => m.json.data.threshold === 80)!.json.data).toEqual({
      organisation_id: org,
      external_id: null,
      tier: 'free',
      is_active: true,
      is_expired: false,
      version: expect.any(Number),
      metric: 'ai_tokens',
      threshold: 80,
      used: 85,
      limit: 100,
      period_start: periodStart,
    });

    // Reached again in a later period: sent again (this period's counter remembers only this period).
    await a.db.query(`UPDATE usage_counters SET period_start = period_start - 86400 * 40 WHERE organisation_id = $1 AND metric = 'ai_tokens'`, [org]);
    await report(a, org, 55).expect(200);
    expect((await thresholds(org)).slice(4)).toEqual([[50, 55]]);
  });

  it('usage.threshold: batches and reservations’ commits count, holds do not; a refused report sends nothing', async () => {
    const org = (await createOrganisation(a)).id;
    const events = [30, 30, 5].map((amount) => ({ organisation_id: org, metric: 'ai_tokens', amount }));
    const { body } = await a.http().post('/api/licensing/usage/batch').set('X-Service-Key', KEY).send({ events }).expect(200);
    expect(body.results.map((r: { status: number }) => r.status)).toEqual([200, 200, 200]);
    expect(await thresholds(org)).toEqual([[50, 60]]);

    const hold = (await reserve(a, org, 30).expect(201)).body;
    expect(await thresholds(org)).toEqual([[50, 60]]);
    await commit(b, hold.id, 20).expect(200);
    expect(await thresholds(org)).toEqual([
      [50, 60],
      [80, 85],
    ]);
    // No credits: a report past the included 100 is refused and sends nothing.
    expect((await report(a, org, 20).expect(402)).body.code).toBe('insufficient_credits');
    expect(await thresholds(org)).toEqual([
      [50, 60],
      [80, 85],
    ]);
  });

  it('credits.low: once when available falls below 10 % of the included limit, again only after it rose above (a grant); an enabled automatic top-up’s threshold instead', async () => {
    const org = (await createOrganisation(a)).id;
    await report(a, org, 85).expect(200);
    expect(await lows(org)).toEqual([]);
    await report(b, org, 6).expect(200);
    await report(a, org, 1).expect(200);
    expect(await lows(org)).toEqual([[9, 10]]);
    expect((await messages(org, 'credits.low'))[0]).toEqual({ metric: 'ai_tokens', available: 9, threshold: 10 });

    await giveCredits(a, org, 50);
    await report(a, org, 45).expect(200);
    expect(await lows(org)).toEqual([[9, 10]]);
    await report(b, org, 5).expect(200);
    expect(await lows(org)).toEqual([
      [9, 10],
      [8, 10],
    ]);

    // An automatic top-up's threshold (enabled) decides; available 8 + 100 given: 108, then 58 is below 60.
    await giveCredits(a, org, 100);
    await transaction(a.db, (m) =>
      a.app.get(CreditsService).saveAutoRecharge(m, { organisationId: org, metric: 'ai_tokens', pack: 'tokens_1k', threshold: 60, monthlyLimit: 3 }),
    );
    await report(a, org, 40).expect(200);
    expect(await lows(org)).toHaveLength(2);
    await report(a, org, 10).expect(200);
    expect((await lows(org)).slice(2)).toEqual([[58, 60]]);
    // Turned off (a declined payment): 10 % of the included limit again; a hold takes from available too.
    await transaction(a.db, (m) => a.app.get(CreditsService).disableAutoRecharge(m, org, 'ai_tokens', 'Your card was declined.'));
    await giveCredits(a, org, 10);
    await reserve(b, org, 60).expect(201);
    expect((await lows(org)).slice(2)).toEqual([
      [58, 60],
      [8, 10],
    ]);
  });

  it('two instances, 40 concurrent reports and holds crossing every threshold: one usage.threshold per threshold, one credits.low', async () => {
    const org = (await createOrganisation(a)).id;
    await giveCredits(a, org, 100);
    // 100 included + 100 of credits, 40 × 5 asked for: available 200 → 0, used 0 → 200.
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        if (i % 4 !== 3) return report(on(i), org, 5);
        const held = await reserve(on(i), org, 5);
        return held.status === 201 ? commit(on(i + 1), held.body.id, 5) : held;
      }),
    );
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect((await thresholds(org)).map(([threshold]) => threshold)).toEqual([50, 80, 100, 150]);
    expect((await thresholds(org)).map(([, used]) => used)).toEqual([50, 80, 100, 150]);
    expect((await lows(org)).map(([, threshold]) => threshold)).toEqual([10]);
    expect(await a.db.query(`SELECT alerted_threshold, credits_low FROM usage_counters WHERE organisation_id = $1 AND metric = 'ai_tokens'`, [org])).toEqual([
      { alerted_threshold: 150, credits_low: true },
    ]);
  });

  it('credits.granted on every grant: an operator’s and a rollover', async () => {
    const org = (await createOrganisation(a)).id;
    await a
      .http()
      .post(`/api/admin/organisations/${org}/credits/grants`)
      .set('X-Service-Key', KEY)
      .send({ metric: 'ai_tokens', amount: 70, idempotency_key: 'alerts-admin' })
      .expect(201);
    // Last month used 10 of its 100: 30 (the most) rolled over.
    const lastMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1) / 1000;
    await a.db.query(`INSERT INTO usage_counters (organisation_id, metric, period_start, used) VALUES ($1, 'ai_tokens', $2, 10)`, [org, lastMonth]);
    expect(await a.app.get(CreditJobs).rollOver(org)).toBe(1);
    const granted = await messages(org, 'credits.granted');
    expect(granted.map((d) => [d.source, d.amount, d.balance])).toEqual([
      ['admin', 70, 70],
      ['rollover', 30, 100],
    ]);
  });
});
