import { randomUUID } from 'node:crypto';
import { counters, errorBody, setLicense } from './licensing-fixtures';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-batch';
// Capacity messages are written to the outbox whether or not this URL ever answers.
const NOTIFY = { NOTIFY_URLS: 'http://127.0.0.1:9/hook', NOTIFY_SECRET: `whsec_${Buffer.from('batch-test-secret-0123456789').toString('base64')}` };

describe('POST /api/licensing/usage/batch', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, ...NOTIFY } });
  });
  afterAll(async () => {
    await t.close();
  });

  const batch = (body: unknown) => t.http().post('/api/licensing/usage/batch').set('X-Service-Key', KEY).send(body as object);
  const single = (body: object) => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body);
  const newOrg = async () => (await createOrganisation(t)).id;
  const ok = (used: number, limit: number) => ({ status: 200, used, limit, at_capacity: used >= limit });
  const failed = (status: number, code: string) => ({ status, used: null, limit: null, at_capacity: null, code });

  it('one result per event, in order, each as a single report would answer; refused events fail alone', async () => {
    const org = await newOrg();
    const ev = (metric: unknown, amount: unknown, organisation_id: unknown = org) => ({ organisation_id, metric, amount });
    const res = await batch({
      events: [
        ev('projects', 1),
        ev('ai_tokens', 1500),
        ev('projects', 5),
        ev('projects', 1, randomUUID()),
        ev('users', 1),
        ev('ai_tokens', -5),
        ev('projects', 0),
        ev('projects', 1, 'not-a-uuid'),
        ev('projects', 2),
        ev('projects', -1),
      ],
    }).expect(200);
    expect(res.body.results).toEqual([
      ok(1, 3),
      ok(1500, 100_000),
      { status: 402, used: 1, limit: 3, at_capacity: false, code: 'limit_exceeded' },
      failed(404, 'organisation_not_found'),
      failed(400, 'validation_failed'),
      failed(400, 'negative_amount'),
      failed(400, 'validation_failed'),
      failed(400, 'validation_failed'),
      ok(3, 3),
      ok(2, 3),
    ]);
    expect(await counters(t, org)).toEqual([
      { metric: 'ai_tokens', period_start: expect.any(Number), used: 1500 },
      { metric: 'projects', period_start: 0, used: 2 },
    ]);
  });

  it('1000 events are accepted, in order', async () => {
    const org = await newOrg();
    const res = await batch({ events: Array.from({ length: 1000 }, () => ({ organisation_id: org, metric: 'ai_tokens', amount: 3 })) }).expect(200);
    expect(res.body.results.map((r: { used: number }) => r.used)).toEqual(Array.from({ length: 1000 }, (_, i) => 3 * (i + 1)));
    expect((await counters(t, org))[0].used).toBe(3000);
  });

  describe('a malformed batch → 400 validation_failed and nothing applied', () => {
    let org: string;
    beforeEach(async () => {
      org = await newOrg();
    });
    const valid = () => ({ organisation_id: org, metric: 'projects', amount: 1 });
    // Built per test, each with an organisation of its own; a malformed event sits between valid ones.
    const withBad = (bad: (event: object) => unknown) => () => ({ events: [valid(), bad(valid()), valid()] });

    it.each([
      ['events missing', () => ({})],
      ['events not an array', () => ({ events: valid() })],
      ['events empty', () => ({ events: [] })],
      ['1001 events', () => ({ events: Array.from({ length: 1001 }, valid) })],
      ['an unknown top-level field', () => ({ events: [valid()], extra: 1 })],
      ['an event that is a number', withBad(() => 7)],
      ['an event that is null', withBad(() => null)],
      ['an event that is an array', withBad((e) => [e])],
      ['organisation_id a number', withBad((e) => ({ ...e, organisation_id: 1 }))],
      ['metric a number', withBad((e) => ({ ...e, metric: 1 }))],
      ['amount a string', withBad((e) => ({ ...e, amount: '1' }))],
      ['amount a fraction', withBad((e) => ({ ...e, amount: 1.5 }))],
      ['amount null', withBad((e) => ({ ...e, amount: null }))],
      ['amount missing', withBad((e) => ({ ...e, amount: undefined }))],
      ['metric missing', withBad((e) => ({ ...e, metric: undefined }))],
      ['idempotency_key a number', withBad((e) => ({ ...e, idempotency_key: 1 }))],
      ['an unknown field in an event', withBad((e) => ({ ...e, extra: true }))],
    ])('%s', async (_label, body) => {
      const res = await batch(body()).expect(400);
      expect(res.body).toEqual(errorBody(400, 'validation_failed'));
      expect(await counters(t, org)).toEqual([]);
    });

    it('the same batch well formed applies (the cases above fail for their flaw alone)', async () => {
      const res = await batch(withBad((e) => e)()).expect(200);
      expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200, 200]);
    });

    it('no service key → 401, nothing applied', async () => {
      const res = await t.http().post('/api/licensing/usage/batch').send({ events: [valid()] }).expect(401);
      expect(res.body).toEqual(errorBody(401, 'service_key_required'));
      expect(await counters(t, org)).toEqual([]);
    });
  });

  describe('idempotency keys: one key space with single reports', () => {
    it('a batch sent again counts each event once and gets the same results', async () => {
      const org = await newOrg();
      const body = { events: [1, 2, 3].map((n) => ({ organisation_id: org, metric: 'ai_tokens', amount: n * 100, idempotency_key: `b-${n}` })) };
      const first = await batch(body).expect(200);
      expect(first.body.results).toEqual([ok(100, 100_000), ok(300, 100_000), ok(600, 100_000)]);
      const again = await batch(body).expect(200);
      expect(again.body.results).toEqual(first.body.results);
      expect((await counters(t, org))[0].used).toBe(600);
    });

    it('keys of single reports hold in a batch and the other way round; another amount → 409 for that event', async () => {
      const org = await newOrg();
      const report = (amount: number, key: string) => ({ organisation_id: org, metric: 'ai_tokens', amount, idempotency_key: key });
      await single(report(10, 's-1')).expect(200);
      const res = await batch({ events: [report(10, 's-1'), report(20, 'b-1'), report(99, 's-1'), report(20, 'b-1'), report(5, 'b-1')] }).expect(200);
      expect(res.body.results).toEqual([
        ok(10, 100_000),
        ok(30, 100_000),
        failed(409, 'idempotency_key_reused'),
        ok(30, 100_000),
        failed(409, 'idempotency_key_reused'),
      ]);
      const repeat = await single(report(20, 'b-1')).expect(200);
      expect(repeat.body).toEqual({ metric: 'ai_tokens', used: 30, limit: 100_000, at_capacity: false });
      expect((await counters(t, org))[0].used).toBe(30);
    });

    it('a refused event keeps no key: once there is room, the same batch applies it', async () => {
      const org = await newOrg();
      const body = { events: [{ organisation_id: org, metric: 'projects', amount: 4, idempotency_key: 'p-4' }] };
      expect((await batch(body).expect(200)).body.results).toEqual([{ status: 402, used: 0, limit: 3, at_capacity: false, code: 'limit_exceeded' }]);
      await setLicense(t, org, { tier: 'pro', status: 'active' });
      expect((await batch(body).expect(200)).body.results).toEqual([ok(4, 25)]);
      expect((await batch(body).expect(200)).body.results).toEqual([ok(4, 25)]);
    });
  });

  it('batches racing single reports on one organisation accept exactly the limit, never more', async () => {
    const org = await newOrg();
    await setLicense(t, org, { tier: 'pro', status: 'active' }); // 25 projects
    // Batches of 10 (each first tried as one sum) and of 30 (a sum that never fits: one by one).
    const events = (n: number) => ({ events: Array.from({ length: n }, () => ({ organisation_id: org, metric: 'projects', amount: 1 })) });
    const answers = await Promise.all([
      batch(events(10)),
      batch(events(30)),
      ...Array.from({ length: 30 }, () => single({ organisation_id: org, metric: 'projects', amount: 1 })),
      batch(events(10)),
      batch(events(10)),
    ]);
    const statuses = [
      ...answers.flatMap((r) => (r.body.results ? r.body.results.map((x: { status: number }) => x.status) : [r.status])),
    ];
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.filter((s) => s === 402)).toHaveLength(65);
    // Each accepted event saw a counter value of its own: none was applied twice or to the same state.
    const used = answers.flatMap((r) => (r.body.results ?? [r.body]).filter((x: { used?: number; status?: number }) => x.status !== 402 && x.used !== undefined));
    expect(used.map((x: { used: number }) => x.used).sort((a: number, b: number) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 25 }]);
  });

  it('increases without keys that fit together: the counter values one by one would give, one capacity message at the last', async () => {
    const org = await newOrg();
    const ev = { organisation_id: org, metric: 'projects', amount: 1 };
    expect((await batch({ events: [ev, ev, ev] }).expect(200)).body.results).toEqual([ok(1, 3), ok(2, 3), ok(3, 3)]);
    const refused = { status: 402, used: 3, limit: 3, at_capacity: true, code: 'limit_exceeded' };
    expect((await batch({ events: [ev, ev] }).expect(200)).body.results).toEqual([refused, refused]);
    const messages = await t.db.query(
      `SELECT body::json -> 'data' ->> 'used' AS used FROM notification_messages WHERE organisation_id = $1 AND type = 'usage.capacity'`,
      [org],
    );
    expect(messages).toEqual([{ used: '3' }]);
    expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 3 }]);
  });

  it('a usage.capacity message per crossing, once, also when the batch is sent again', async () => {
    const org = await newOrg();
    const ev = (amount: number, key: string) => ({ organisation_id: org, metric: 'projects', amount, idempotency_key: key });
    // 0 → 2, → 3 (into capacity), → 2 (out), → 3 (in), a refused 4th.
    const body = { events: [ev(2, 'c1'), ev(1, 'c2'), ev(-1, 'c3'), ev(1, 'c4'), ev(1, 'c5')] };
    const first = await batch(body).expect(200);
    expect(first.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200, 200, 200, 402]);
    await batch(body).expect(200);
    const messages = await t.db.query(
      `SELECT body::json -> 'data' ->> 'used' AS used FROM notification_messages WHERE organisation_id = $1 AND type = 'usage.capacity' ORDER BY version`,
      [org],
    );
    expect(messages.map((m: { used: string }) => Number(m.used))).toEqual([3, 2, 3]);
  });
});
