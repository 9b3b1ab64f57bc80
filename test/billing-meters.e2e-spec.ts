import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-meters';

/** Spec §13, provider meters: what a usage write adds to the meter windows. */
describe('provider meters: windows', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, PAYPROVIDER_METER_AI_TOKENS: 'ai_tokens', PAYPROVIDER_METER_PROJECTS: 'projects' } });
  });
  afterAll(() => t.close());

  const report = (organisation_id: string, metric: string, amount: number) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id, metric, amount });
  const customerOrg = async (customer: string | null = `cus_${Math.random().toString(36).slice(2)}`) => {
    const org = (await createOrganisation(t)).id;
    if (customer) await t.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org, customer]);
    return org;
  };
  const windows = (org: string): Promise<{ metric: string; start: number; end: number; value: number; customer: string; status: string }[]> =>
    t.db.query(
      `SELECT metric, window_start::float8 AS start, window_end::float8 AS "end", value::float8 AS value, customer_id AS customer, status
       FROM meter_windows WHERE organisation_id = $1 ORDER BY metric, window_start`,
      [org],
    );
  const sum = (rows: { value: number }[]) => rows.reduce((n, w) => n + w.value, 0);

  it('sums concurrent accepted reports exactly, per window of METER_FLUSH_S seconds, for the customer', async () => {
    const org = await customerOrg('cus_meters_sum');
    const amounts = Array.from({ length: 60 }, (_, i) => 1 + (i % 7) * 13);
    const answers = await Promise.all(amounts.map((amount) => report(org, 'ai_tokens', amount)));
    expect(answers.map((r) => r.status)).toEqual(amounts.map(() => 200));
    const rows = await windows(org);
    expect(sum(rows)).toBe(amounts.reduce((a, b) => a + b, 0));
    for (const w of rows) {
      expect(w).toMatchObject({ metric: 'ai_tokens', customer: 'cus_meters_sum', status: 'open' });
      expect(w.start % t.config.meterFlushS).toBe(0);
      expect(w.end - w.start).toBe(t.config.meterFlushS);
    }
  });

  it('never adds refused usage, decreases, or usage accepted before the organisation had a provider customer', async () => {
    const org = await customerOrg(null);
    await report(org, 'ai_tokens', 500).expect(200);
    await report(org, 'projects', 2).expect(200);
    expect(await windows(org)).toEqual([]);
    await t.db.query(`UPDATE organisations SET provider_customer_id = 'cus_meters_later' WHERE id = $1`, [org]);
    await report(org, 'projects', 1).expect(200); // 3 of 3
    await report(org, 'projects', 1).expect(402); // refused: not counted, not metered
    await report(org, 'projects', -2).expect(200); // a decrease: never reported
    await report(org, 'ai_tokens', 700).expect(200);
    const rows = await windows(org);
    expect(rows.map((w) => [w.metric, w.value, w.customer])).toEqual([
      ['ai_tokens', 700, 'cus_meters_later'],
      ['projects', 1, 'cus_meters_later'],
    ]);
  });
});
