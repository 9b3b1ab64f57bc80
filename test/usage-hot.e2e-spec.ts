import { counters, setLicense } from './licensing-fixtures';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-hot';

/**
 * Many single reports at once, on two instances of the service: each instance groups the reports waiting
 * (for one organisation, or for many) into one statement (UsageService), and the instances meet on the
 * counters' row locks. Exact either way, and a 200 is only sent once its report is committed.
 */
describe('single reports on one hot organisation', () => {
  let t: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
    second = await startTestApp({ databaseUrl: t.databaseUrl, env: { SERVICE_API_KEYS: KEY } });
  });
  afterAll(async () => {
    await second.close();
    await t.close();
  });

  const report = (app: TestApp, body: object) => app.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body);
  const usedNow = async (org: string, metric: string) => (await counters(t, org)).find((c: { metric: string }) => c.metric === metric)?.used ?? 0;

  it('120 at once: each counted once, each answered its own counter value, each 200 already committed when answered', async () => {
    const org = (await createOrganisation(t)).id;
    const committedWhenAnswered: boolean[] = [];
    const answers = await Promise.all(
      Array.from({ length: 120 }, async (_, i) => {
        const res = await report(i % 2 ? second : t, { organisation_id: org, metric: 'ai_tokens', amount: 1 });
        // Read from another connection as soon as the answer arrives: the report must be visible already.
        if (res.status === 200) committedWhenAnswered.push((await usedNow(org, 'ai_tokens')) >= res.body.used);
        return res;
      }),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(120).fill(200));
    expect(answers.map((r) => r.body.used).sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(committedWhenAnswered).toEqual(Array(120).fill(true));
    expect(await usedNow(org, 'ai_tokens')).toBe(120);
  });

  it('at a block limit, with amounts of 1 to 3: never past the limit, the counter is the sum of what was accepted', async () => {
    const org = (await createOrganisation(t)).id;
    await setLicense(t, org, { tier: 'pro', status: 'active' }); // 25 projects, blocked past it
    const amounts = Array.from({ length: 60 }, (_, i) => 1 + (i % 3));
    const answers = await Promise.all(
      amounts.map((amount, i) => report(i % 2 ? second : t, { organisation_id: org, metric: 'projects', amount })),
    );
    expect(answers.every((r) => r.status === 200 || r.status === 402)).toBe(true);
    const accepted = amounts.filter((_, i) => answers[i].status === 200);
    const final = await usedNow(org, 'projects');
    expect(final).toBe(accepted.reduce((sum, a) => sum + a, 0));
    expect(final).toBeLessThanOrEqual(25);
    // A report is refused only when it did not fit at its turn, and the counter only grows: once a 3 was
    // refused, fewer than 3 were left.
    expect(final).toBeGreaterThan(22);
    // Each accepted report answered the counter after it: distinct values, each the one before plus its amount.
    const values = answers.filter((r) => r.status === 200).map((r) => r.body.used as number);
    expect(new Set(values).size).toBe(values.length);
    expect(Math.max(...values)).toBe(final);
  });

  it('a group whose statement fails: every report of it answers 500, and none was counted', async () => {
    const org = (await createOrganisation(t)).id;
    await report(t, { organisation_id: org, metric: 'ai_tokens', amount: 5 }).expect(200);
    // The database refuses this organisation's counter writes (as a failing disk or a killed backend would).
    await t.db.query(`CREATE FUNCTION refuse_usage() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$`);
    await t.db.query(
      `CREATE TRIGGER refuse_usage BEFORE INSERT OR UPDATE ON usage_counters FOR EACH ROW
       WHEN (NEW.organisation_id = '${org}') EXECUTE FUNCTION refuse_usage()`,
    );
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => report(t, { organisation_id: org, metric: 'ai_tokens', amount: 1 })));
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(500));
      expect(await usedNow(org, 'ai_tokens')).toBe(5);
    } finally {
      await t.db.query('DROP TRIGGER refuse_usage ON usage_counters');
      await t.db.query('DROP FUNCTION refuse_usage()');
    }
    expect((await report(t, { organisation_id: org, metric: 'ai_tokens', amount: 1 }).expect(200)).body.used).toBe(6);
  });

  it('reports for many organisations at once, grouped together: every counter exact', async () => {
    const orgs = await Promise.all(Array.from({ length: 8 }, async () => (await createOrganisation(t)).id));
    const answers = await Promise.all(
      Array.from({ length: 160 }, (_, i) => report(i % 2 ? second : t, { organisation_id: orgs[i % 8], metric: 'ai_tokens', amount: 2 })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(160).fill(200));
    for (const org of orgs) expect(await usedNow(org, 'ai_tokens')).toBe(40);
  });

  it('a group of many organisations: each report gets its own answer (an unknown organisation 404, a full one 402, a repeat its first answer)', async () => {
    const [open, full] = await Promise.all([createOrganisation(t), createOrganisation(t)]);
    await setLicense(t, full.id, { tier: 'pro', status: 'active' });
    const unknown = '00000000-0000-4000-8000-00000000dead';
    const bodies = [
      ...Array.from({ length: 30 }, () => ({ organisation_id: open.id, metric: 'ai_tokens', amount: 3 })),
      ...Array.from({ length: 30 }, () => ({ organisation_id: full.id, metric: 'projects', amount: 1 })),
      ...Array.from({ length: 5 }, () => ({ organisation_id: unknown, metric: 'ai_tokens', amount: 1 })),
      ...Array.from({ length: 5 }, () => ({ organisation_id: open.id, metric: 'projects', amount: 1, idempotency_key: 'once' })),
    ];
    const answers = await Promise.all(bodies.map((body, i) => report(i % 2 ? second : t, body)));
    const statuses = (from: number, to: number) => answers.slice(from, to).map((r) => r.status);
    expect(statuses(0, 30)).toEqual(Array(30).fill(200));
    expect(statuses(30, 60).filter((s) => s === 200)).toHaveLength(25); // pro: 25 projects
    expect(statuses(30, 60).filter((s) => s === 402)).toHaveLength(5);
    expect(statuses(60, 65)).toEqual(Array(5).fill(404));
    expect(statuses(65, 70)).toEqual(Array(5).fill(200));
    for (const r of answers.slice(65, 70)) expect(r.body).toEqual({ metric: 'projects', used: 1, limit: 3, at_capacity: false });
    expect(await usedNow(open.id, 'ai_tokens')).toBe(90);
    expect(await usedNow(open.id, 'projects')).toBe(1);
    expect(await usedNow(full.id, 'projects')).toBe(25);
  });
});
