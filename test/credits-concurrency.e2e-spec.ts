import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-concurrency';

/**
 * Exactly once under concurrency (spec §16.1, §16.5; issue 40, item 2): two instances on one database, reports,
 * reservations and commits fired at once against a small balance spread over several grants, and the same keys
 * and commits replayed on both.
 */
describe('credits: two instances at once', () => {
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

  const on = (i: number) => (i % 2 ? a : b);
  const report = (t: TestApp, org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const reserve = (t: TestApp, org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const commit = (t: TestApp, id: string, amount: number) => t.http().post(`/api/licensing/usage/reservations/${id}/commit`).set('X-Service-Key', KEY).send({ amount });
  const used = async (org: string) =>
    ((await a.db.query(`SELECT COALESCE(sum(used), 0)::int AS used FROM usage_counters WHERE organisation_id = $1 AND metric = 'ai_tokens'`, [org])) as { used: number }[])[0]
      .used;
  const grants = async (org: string) =>
    (await a.db.query(`SELECT amount, remaining FROM credit_grants WHERE organisation_id = $1 ORDER BY created_at, id`, [org])) as { amount: number; remaining: number }[];
  const drawn = async (org: string) =>
    ((await a.db.query(`SELECT COALESCE(-sum(amount), 0)::int AS drawn FROM credit_ledger WHERE organisation_id = $1 AND kind = 'consume'`, [org])) as { drawn: number }[])[0]
      .drawn;

  it('72 reports, holds and commits at once on two instances against 100 included + 60 of grants: no grant below 0, nothing accepted beyond what they cover, the ledger explains every grant', async () => {
    const org = (await createOrganisation(a)).id;
    await giveCredits(a, org, 25, { priority: 1 });
    await giveCredits(a, org, 20, { priority: 2, category: 'promotional' });
    await giveCredits(a, org, 15, { priority: 3 });
    // 24 plain reports of 5, 24 keyed reports of 5, and 24 reservations of 8 committed at 5 (each on the instance
    // the other did not hold it on): 360 asked for, 160 there.
    let commits = 0;
    const work = Array.from({ length: 72 }, async (_, i) => {
      const t = on(i);
      if (i % 3 === 0) return [await report(t, org, 5)];
      if (i % 3 === 1) return [await report(t, org, 5, { idempotency_key: `k-${i}` })];
      const held = await reserve(t, org, 8);
      if (held.status !== 201) return [held];
      const spent = await commit(on(i + 1), held.body.id, 5);
      // A live hold's commit of less than it holds always fits.
      expect(spent.status).toBe(200);
      commits++;
      return [held, spent];
    });
    const answers = (await Promise.all(work)).flat();
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => ![200, 201, 402].includes(s))).toEqual([]);
    expect(answers.filter((r) => r.status === 402).every((r) => r.body.code === 'insufficient_credits')).toBe(true);
    expect(statuses.filter((s) => s === 201).length).toBe(commits);

    const accepted = answers.filter((r) => r.status === 200).length * 5;
    const total = await used(org);
    expect(total).toBe(accepted);
    expect(total).toBeLessThanOrEqual(160);
    const left = await grants(org);
    expect(left.every((g) => g.remaining >= 0 && g.remaining <= g.amount)).toBe(true);
    expect(await drawn(org)).toBe(total - 100);
    expect(left.reduce((sum, g) => sum + g.remaining, 0)).toBe(160 - total);
    expect(await ledgerMismatches(a, org)).toEqual([]);
    const [{ held }] = await a.db.query(`SELECT count(*)::int AS held FROM usage_reservations WHERE organisation_id = $1 AND status = 'held'`, [org]);
    expect(held).toBe(0);
    // What is left is exactly what the next reports may take: all of it, then nothing.
    const rest = 160 - total;
    expect((await report(a, org, rest + 1).expect(402)).body.code).toBe('insufficient_credits');
    if (rest > 0) expect((await report(b, org, rest).expect(200)).body).toMatchObject({ used: 160, balance: 0, available: 0 });
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });

  it('the same hold keys and the same commits replayed at once on both instances count once and answer the same', async () => {
    const org = (await createOrganisation(a)).id;
    await giveCredits(a, org, 40, { priority: 1 });
    await giveCredits(a, org, 40, { priority: 2 });
    const keys = Array.from({ length: 8 }, (_, i) => `hold-${i}`);
    // 8 holds of 20 (160 of the 180 there), each key sent three times across the two instances.
    const holds = await Promise.all(keys.flatMap((key) => [a, b, a].map((t) => reserve(t, org, 20, { idempotency_key: key }))));
    expect(holds.map((r) => r.status)).toEqual(holds.map(() => 201));
    const ids = keys.map((_, k) => {
      const same = holds.slice(3 * k, 3 * k + 3).map((r) => r.body);
      expect(same[1]).toEqual(same[0]);
      expect(same[2]).toEqual(same[0]);
      return same[0].id as string;
    });
    const [{ n }] = await a.db.query(`SELECT count(*)::int AS n FROM usage_reservations WHERE organisation_id = $1`, [org]);
    expect(n).toBe(8);

    // Each committed at 15, three times at once over both instances: 8 × 15 counted once each.
    const commits = await Promise.all(ids.flatMap((id) => [b, a, b].map((t) => commit(t, id, 15))));
    expect(commits.map((r) => r.status)).toEqual(commits.map(() => 200));
    for (let k = 0; k < ids.length; k++) {
      const same = commits.slice(3 * k, 3 * k + 3).map((r) => r.body);
      expect(same[1]).toEqual(same[0]);
      expect(same[2]).toEqual(same[0]);
    }
    expect(await used(org)).toBe(120);
    expect(await drawn(org)).toBe(20);
    expect((await grants(org)).map((g) => g.remaining)).toEqual([20, 40]);
    // Once more on an instance started afterwards: the same answers, nothing more counted.
    const c = await startTestApp({ env, databaseUrl: a.databaseUrl });
    try {
      for (const [k, id] of ids.entries()) expect((await commit(c, id, 15).expect(200)).body).toEqual(commits[3 * k].body);
    } finally {
      await c.close();
    }
    expect(await used(org)).toBe(120);
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });
});
