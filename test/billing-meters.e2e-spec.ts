import { MeterDelivery } from '../src/billing/meters/meter-delivery';
import { MetersRepository } from '../src/billing/meters/meters.repository';
import { DAY, nowS, setLicense } from './licensing-fixtures';
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

  describe('pruning', () => {
    /** A window of the organisation's customer that ended `daysAgo` days ago, in `status`. */
    const oldWindow = (org: string, metric: string, daysAgo: number, status: string, value = 10) => {
      const end = nowS() - Math.round(daysAgo * DAY);
      return t.db.query(
        `INSERT INTO meter_windows (organisation_id, metric, window_start, window_end, customer_id, value, status, delivered_at)
         SELECT $1, $2, $3::bigint - 60, $3, provider_customer_id, $4, $5, CASE WHEN $5 = 'delivered' THEN to_timestamp($3) END
         FROM organisations WHERE id = $1`,
        [org, metric, end, value, status],
      );
    };
    const left = async (org: string) =>
      (await windows(org)).map((w) => `${w.metric} ${w.status} ${Math.round((nowS() - w.end) / DAY)}d`).sort();

    it('deletes delivered windows past 35 days that no longer count in their period; never pending or failed ones', async () => {
      // A free organisation: its ai_tokens period is the calendar month, so 40 days ago is always before it.
      const free = await customerOrg();
      // (An open window that has ended is the flush's to close; the sweep below runs it.)
      for (const [i, status] of ['delivered', 'pending', 'failed'].entries()) await oldWindow(free, 'ai_tokens', 40 + i, status);
      await oldWindow(free, 'ai_tokens', 10, 'delivered'); // within 35 days: kept
      await oldWindow(free, 'projects', 40, 'delivered'); // a gauge's windows all count (period 0): kept
      // A yearly subscription 100 days into its period: a window of 40 days ago still counts in usage:meters.
      const yearly = await customerOrg();
      await setLicense(t, yearly, { tier: 'pro', status: 'active', periodStart: nowS() - 100 * DAY, periodEnd: nowS() + 265 * DAY });
      await oldWindow(yearly, 'ai_tokens', 40, 'delivered', 7);
      await oldWindow(yearly, 'ai_tokens', 120, 'delivered', 5);
      const summary = () => t.app.get(MetersRepository).summary(yearly, ['ai_tokens']);
      const before = await summary();

      const delivery = t.app.get(MeterDelivery);
      await delivery.sweep(new Date('2026-11-24T10:16:00Z')); // the minutely sweep prunes once an hour, at :17
      expect(await left(free)).toHaveLength(5);
      expect(await delivery.prune()).toBeGreaterThanOrEqual(2);
      expect(await left(free)).toEqual(['ai_tokens delivered 10d', 'ai_tokens failed 42d', 'ai_tokens pending 41d', 'projects delivered 40d']);
      expect(await left(yearly)).toEqual(['ai_tokens delivered 40d']);
      expect(await summary()).toEqual(before);

      await oldWindow(free, 'ai_tokens', 50, 'delivered');
      await delivery.sweep(new Date('2026-11-24T11:17:00Z'));
      expect(await left(free)).toHaveLength(4);
    });
  });
});
