import { errorBody } from './licensing-fixtures';
import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-usage';
const HOUR = 3_600_000;

/**
 * Credits in the usage write (spec §16.1, §16.2): the included amount first, then the grants that count, in their
 * order, inside the report's one statement; a report refused whole when both cannot cover it; never an overdraft,
 * on two instances at once; idempotency keys counting once, also on an instance started afterwards.
 */
describe('credits: consumption in the usage write', () => {
  let a: TestApp;
  let b: TestApp;
  const env = { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() };

  beforeAll(async () => {
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const report = (t: TestApp, org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const remaining = async (org: string) =>
    (await a.db.query(`SELECT id, remaining FROM credit_grants WHERE organisation_id = $1 ORDER BY created_at, id`, [org])) as { id: string; remaining: number }[];
  const consumed = async (org: string) =>
    (await a.db.query(`SELECT grant_id, amount, balance_after, reference FROM credit_ledger WHERE organisation_id = $1 AND kind = 'consume' ORDER BY id`, [
      org,
    ])) as { grant_id: string; amount: number; balance_after: number; reference: string | null }[];
  const newOrg = async () => (await createOrganisation(a)).id;

  it('the included amount first, then the grants by priority, soonest expiry (never last), promotional before paid, effective_at and created_at; one report spans several', async () => {
    const org = await newOrg();
    const days = (n: number) => new Date(Date.now() + n * 24 * HOUR);
    const twoDays = days(2);
    const last = await giveCredits(a, org, 100, { priority: 60 });
    const later = await giveCredits(a, org, 100, { priority: 10, expiresAt: twoDays });
    const soonest = await giveCredits(a, org, 100, { priority: 10, expiresAt: days(1) });
    const promotional = await giveCredits(a, org, 100, { priority: 10, expiresAt: twoDays, category: 'promotional' });
    const never = await giveCredits(a, org, 100, { priority: 10 });
    const older = await giveCredits(a, org, 100, { priority: 10, effectiveAt: new Date(Date.now() - HOUR) });
    // Same priority, expiry (never), category and start: by creation.
    const [first, second] = [await giveCredits(a, org, 10, { priority: 30 }), await giveCredits(a, org, 10, { priority: 30 })];

    expect((await report(a, org, 100).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 100, limit: 100, at_capacity: true, balance: 620, available: 620 });
    expect(await consumed(org)).toEqual([]);
    expect((await report(a, org, 250, { idempotency_key: 'span' }).expect(200)).body).toEqual({
      metric: 'ai_tokens',
      used: 350,
      limit: 100,
      at_capacity: true,
      balance: 370,
      available: 370,
    });
    expect(await consumed(org)).toEqual([
      { grant_id: soonest.id, amount: -100, balance_after: 520, reference: 'span' },
      { grant_id: promotional.id, amount: -100, balance_after: 420, reference: 'span' },
      { grant_id: later.id, amount: -50, balance_after: 370, reference: 'span' },
    ]);
    await report(a, org, 50 + 100 + 100 + 10 + 5).expect(200);
    const left = Object.fromEntries((await remaining(org)).map((g) => [g.id, g.remaining]));
    expect([soonest, promotional, later, older, never, first, second, last].map((g) => left[g.id])).toEqual([0, 0, 0, 0, 0, 0, 5, 100]);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it('refused whole (402 insufficient_credits) when the included amount and the balance cannot cover it: nothing consumed, counted or keyed', async () => {
    const org = await newOrg();
    await giveCredits(a, org, 30);
    await report(a, org, 90).expect(200);
    const refused = await report(a, org, 41, { idempotency_key: 'too-much' }).expect(402);
    expect(refused.body).toEqual(errorBody(402, 'insufficient_credits'));
    expect(refused.body.message).toMatch(/40 available/);
    expect(await consumed(org)).toEqual([]);
    expect(await remaining(org)).toEqual([{ id: expect.any(String), remaining: 30 }]);
    // What exactly fits is accepted, the same key included (a refused report stored no key).
    expect((await report(a, org, 40, { idempotency_key: 'too-much' }).expect(200)).body).toMatchObject({ used: 130, balance: 0, available: 0 });
    await report(a, org, 1).expect(402);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it('a batch: each event draws its own range of the grants, in order, each entry with its key; a refused event fails alone', async () => {
    const org = await newOrg();
    const g1 = await giveCredits(a, org, 50, { priority: 1 });
    const g2 = await giveCredits(a, org, 50, { priority: 2 });
    const events = [
      { organisation_id: org, metric: 'ai_tokens', amount: 120, idempotency_key: 'e1' },
      { organisation_id: org, metric: 'ai_tokens', amount: 60, idempotency_key: 'e2' },
      { organisation_id: org, metric: 'ai_tokens', amount: 21, idempotency_key: 'e3' },
      { organisation_id: org, metric: 'ai_tokens', amount: 20 },
    ];
    const { body } = await a.http().post('/api/licensing/usage/batch').set('X-Service-Key', KEY).send({ events }).expect(200);
    expect(body.results).toEqual([
      { status: 200, used: 120, limit: 100, at_capacity: true, balance: 80, available: 80 },
      { status: 200, used: 180, limit: 100, at_capacity: true, balance: 20, available: 20 },
      { status: 402, used: 180, limit: 100, at_capacity: true, balance: 20, available: 20, code: 'insufficient_credits' },
      { status: 200, used: 200, limit: 100, at_capacity: true, balance: 0, available: 0 },
    ]);
    expect(await consumed(org)).toEqual([
      { grant_id: g1.id, amount: -20, balance_after: 80, reference: 'e1' },
      { grant_id: g1.id, amount: -30, balance_after: 50, reference: 'e2' },
      { grant_id: g2.id, amount: -30, balance_after: 20, reference: 'e2' },
      { grant_id: g2.id, amount: -20, balance_after: 0, reference: null },
    ]);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it('only grants that count: not one expired (without any job), not yet effective, voided, or of another metric', async () => {
    const org = await newOrg();
    const expired = await giveCredits(a, org, 1000, { expiresAt: new Date(Date.now() + HOUR) });
    await a.db.query(`UPDATE credit_grants SET effective_at = now() - interval '2 hours', expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    await giveCredits(a, org, 1000, { effectiveAt: new Date(Date.now() + HOUR) });
    const voided = await giveCredits(a, org, 1000);
    await a.db.query(`UPDATE credit_grants SET voided_at = now(), remaining = 0 WHERE id = $1`, [voided.id]);
    await giveCredits(a, org, 1000, { metric: 'gpu_s' });
    const counts = await giveCredits(a, org, 7);
    expect((await report(a, org, 107).expect(200)).body).toMatchObject({ used: 107, balance: 0, available: 0 });
    await report(a, org, 1).expect(402);
    expect(await consumed(org)).toEqual([{ grant_id: counts.id, amount: -7, balance_after: 0, reference: null }]);
    const check = await a.http().get('/api/licensing/check').query({ organisation_id: org, metric: 'gpu_s', amount: 1010 }).set('X-Service-Key', KEY).expect(200);
    expect(check.body).toEqual({ allowed: true, used: 0, limit: 10, remaining: 10 });
  });

  it('a further metric counted per period draws on its own grants; block and bill metrics ignore any balance', async () => {
    const org = await newOrg();
    for (const metric of ['gpu_s', 'api_s', 'bill_s']) await giveCredits(a, org, 5, { metric });
    const metric = (name: string, amount: number) => report(a, org, amount, { metric: name });
    expect((await metric('gpu_s', 15).expect(200)).body).toEqual({ metric: 'gpu_s', used: 15, limit: 10, at_capacity: true, balance: 0, available: 0 });
    expect((await metric('api_s', 11).expect(402)).body.code).toBe('limit_exceeded');
    expect((await metric('bill_s', 15).expect(200)).body).toEqual({ metric: 'bill_s', used: 15, limit: 10, at_capacity: true, overage: 5 });
    expect((await metric('gpu_s', -1).expect(400)).body.code).toBe('negative_amount');
    const left = await a.db.query(`SELECT metric, remaining FROM credit_grants WHERE organisation_id = $1 ORDER BY metric`, [org]);
    expect(left).toEqual([
      { metric: 'api_s', remaining: 5 },
      { metric: 'bill_s', remaining: 5 },
      { metric: 'gpu_s', remaining: 0 },
    ]);
  });

  it('the check counts the balance: allowed while included left + balance covers the amount', async () => {
    const org = await newOrg();
    await giveCredits(a, org, 50);
    const check = async (amount: number) =>
      (await a.http().get('/api/licensing/check').query({ organisation_id: org, metric: 'ai_tokens', amount }).set('X-Service-Key', KEY).expect(200)).body;
    expect(await check(150)).toEqual({ allowed: true, used: 0, limit: 100, remaining: 100 });
    expect(await check(151)).toMatchObject({ allowed: false });
  });

  it('two instances, 60 concurrent reports against a small balance: no grant overdrawn, and what was accepted is exactly what included and balance covered', async () => {
    const org = await newOrg();
    await giveCredits(a, org, 47, { priority: 1 });
    await giveCredits(a, org, 33, { priority: 2, category: 'promotional' });
    await giveCredits(a, org, 20, { priority: 3 });
    // 100 included + 100 of grants; 60 reports of 7 (420) ask for twice that.
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => report(i % 2 ? a : b, org, 7, i % 3 ? {} : { idempotency_key: `race-${i}` })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
    const accepted = statuses.filter((s) => s === 200).length;
    // 200 units cover 28 reports of 7 (196); the rest cannot fit whole.
    expect(accepted).toBe(28);
    expect(results.filter((r) => r.status === 402).every((r) => r.body.code === 'insufficient_credits')).toBe(true);
    const [{ used }] = await a.db.query(`SELECT used FROM usage_counters WHERE organisation_id = $1 AND metric = 'ai_tokens'`, [org]);
    expect(used).toBe(196);
    expect((await remaining(org)).map((g) => g.remaining)).toEqual([0, 0, 4]);
    const [{ drawn }] = await a.db.query(`SELECT -sum(amount)::int AS drawn FROM credit_ledger WHERE organisation_id = $1 AND kind = 'consume'`, [org]);
    expect(drawn).toBe(96);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it('the same keys replayed, at once on two instances and again on an instance started afterwards, count once and answer the same', async () => {
    const org = await newOrg();
    await giveCredits(a, org, 100);
    const keys = Array.from({ length: 10 }, (_, i) => `replay-${i}`);
    const first = await Promise.all(keys.flatMap((key) => [a, b, a].map((t) => report(t, org, 15, { idempotency_key: key }))));
    expect(first.every((r) => r.status === 200)).toBe(true);
    // 10 reports of 15 = 150: 100 included, 50 drawn.
    const byKey = new Map<string, unknown>();
    for (const [i, r] of first.entries()) {
      const key = keys[Math.floor(i / 3)];
      if (!byKey.has(key)) byKey.set(key, r.body);
      expect(r.body).toEqual(byKey.get(key));
    }
    const c = await startTestApp({ env, databaseUrl: a.databaseUrl });
    try {
      for (const key of keys) expect((await report(c, org, 15, { idempotency_key: key }).expect(200)).body).toEqual(byKey.get(key));
      expect((await report(c, org, 16, { idempotency_key: keys[0] }).expect(409)).body.code).toBe('idempotency_key_reused');
    } finally {
      await c.close();
    }
    const [{ used }] = await a.db.query(`SELECT used FROM usage_counters WHERE organisation_id = $1 AND metric = 'ai_tokens'`, [org]);
    expect(used).toBe(150);
    expect(await remaining(org)).toEqual([{ id: expect.any(String), remaining: 50 }]);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });
});
