import { randomUUID } from 'node:crypto';
import { counters, DAY, errorBody, monthStartS, nowS, setLicense, setUsage } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-one';
const KEY_2 = 'svc-key-two';

describe('POST /api/licensing/usage', () => {
  let t: TestApp;
  // Two more instances on the same database: one with a single key, one with none configured. They live
  // as long as `t`: passport strategies are process-global, so closing an instance early would leave
  // `t` authenticating sessions through a closed pool.
  let second: TestApp;
  let closed: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: `${KEY},${KEY_2}` } });
    second = await startTestApp({ databaseUrl: t.databaseUrl, env: { SERVICE_API_KEYS: KEY } });
    closed = await startTestApp({ databaseUrl: t.databaseUrl, env: { SERVICE_API_KEYS: '' } });
  });
  afterAll(async () => {
    await closed.close();
    await second.close();
    await t.close();
  });

  /** `key` null: no X-Service-Key header at all. */
  const report = (body: object, app: TestApp = t, key: string | null = KEY) => {
    const req = app.http().post('/api/licensing/usage');
    if (key !== null) req.set('X-Service-Key', key);
    return req.send(body);
  };
  const newOrg = async () => (await createOrganisation(t)).id;

  it('200: adds usage and answers with the counter against the limit in force', async () => {
    const org = await newOrg();
    const res = await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
    expect(res.body).toEqual({ metric: 'projects', used: 1, limit: 3, at_capacity: false });
    const second = await report({ organisation_id: org, metric: 'projects', amount: 2 }, t, KEY_2).expect(200);
    expect(second.body).toEqual({ metric: 'projects', used: 3, limit: 3, at_capacity: true });
    const tokens = await report({ organisation_id: org, metric: 'ai_tokens', amount: 1500 }).expect(200);
    expect(tokens.body).toEqual({ metric: 'ai_tokens', used: 1500, limit: 100_000, at_capacity: false });
  });

  describe('bad input: 4xx in the error shape and nothing changed', () => {
    let org: string;
    beforeAll(async () => {
      org = await newOrg();
      await setUsage(t, org, 'projects', 1);
    });
    const valid = () => ({ organisation_id: org, metric: 'projects', amount: 1 });

    it.each([
      ['string amount', { amount: '1' }, 'validation_failed'],
      ['fraction', { amount: 1.5 }, 'validation_failed'],
      ['zero', { amount: 0 }, 'validation_failed'],
      ['huge amount', { amount: 1e12 + 1 }, 'validation_failed'],
      ['huge negative amount', { amount: -1e12 - 1 }, 'validation_failed'],
      ['amount beyond 2^53', { amount: 2 ** 60 }, 'validation_failed'],
      ['missing amount', { amount: undefined }, 'validation_failed'],
      ['null amount', { amount: null }, 'validation_failed'],
      ['boolean amount', { amount: true }, 'validation_failed'],
      ['negative ai_tokens', { metric: 'ai_tokens', amount: -5 }, 'negative_amount'],
      ['unknown metric', { metric: 'users' }, 'validation_failed'],
      ['unknown field', { extra: 1 }, 'validation_failed'],
      ['organisation_id not a UUID', { organisation_id: 'abc' }, 'validation_failed'],
      ['organisation_id as an array', { organisation_id: [randomUUID()] }, 'validation_failed'],
      ['empty idempotency key', { idempotency_key: '' }, 'validation_failed'],
      ['idempotency key too long', { idempotency_key: 'k'.repeat(256) }, 'validation_failed'],
      ['idempotency key not a string', { idempotency_key: 42 }, 'validation_failed'],
    ])('%s → 400', async (_label, patch, code) => {
      const before = await counters(t, org);
      const res = await report({ ...valid(), ...patch }).expect(400);
      expect(res.body).toEqual(errorBody(400, code));
      expect(await counters(t, org)).toEqual(before);
    });

    it('malformed JSON → 400 invalid_json', async () => {
      const before = await counters(t, org);
      const res = await t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).set('Content-Type', 'application/json').send('{"amount":');
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorBody(400, 'invalid_json'));
      expect(await counters(t, org)).toEqual(before);
    });

    it.each([
      ['no key', 401, null, 'service_key_required'],
      ['an empty key', 401, '', 'service_key_required'],
      ['a wrong key', 401, 'svc-key-on', 'invalid_service_key'],
      ['a key with a valid key as prefix', 401, `${KEY}x`, 'invalid_service_key'],
    ])('%s → %i', async (_label, status, key, code) => {
      const before = await counters(t, org);
      const res = await report(valid(), t, key).expect(status);
      expect(res.body).toEqual(errorBody(status, code));
      expect(await counters(t, org)).toEqual(before);
    });

    it('a member session alone cannot write usage (403), nor with a wrong key (401)', async () => {
      const member = await createUserWithSession(t, { org, role: 'owner' });
      const before = await counters(t, org);
      const alone = await t.http().post('/api/licensing/usage').set(member.auth).send(valid()).expect(403);
      expect(alone.body).toEqual(errorBody(403, 'session_not_accepted'));
      await t.http().post('/api/licensing/usage').set(member.auth).set('X-Service-Key', 'wrong').send(valid()).expect(401);
      expect(await counters(t, org)).toEqual(before);
    });

    it('no SERVICE_API_KEYS configured → 403 for every key', async () => {
      const before = await counters(t, org);
      for (const key of [KEY, '', null]) {
        const res = await report(valid(), closed, key).expect(403);
        expect(res.body).toEqual(errorBody(403, 'service_keys_not_configured'));
      }
      expect(await counters(t, org)).toEqual(before);
    });

    it('unknown organisation → 404, with or without an idempotency key, and nothing stored', async () => {
      const ghost = randomUUID();
      for (const extra of [{}, { idempotency_key: 'k-ghost' }]) {
        const res = await report({ organisation_id: ghost, metric: 'projects', amount: 1, ...extra }).expect(404);
        expect(res.body).toEqual(errorBody(404, 'organisation_not_found'));
      }
      const rows = await t.db.query(
        `SELECT (SELECT count(*) FROM usage_counters WHERE organisation_id = $1) + (SELECT count(*) FROM usage_idempotency_keys WHERE organisation_id = $1) AS n`,
        [ghost],
      );
      expect(rows[0].n).toBe(0);
    });
  });

  describe('limits', () => {
    it('402 limit_exceeded refuses an increase past the limit whole and changes nothing', async () => {
      const org = await newOrg();
      await report({ organisation_id: org, metric: 'projects', amount: 2 }).expect(200);
      const before = await counters(t, org);
      const res = await report({ organisation_id: org, metric: 'projects', amount: 2 }).expect(402);
      expect(res.body).toEqual(errorBody(402, 'limit_exceeded'));
      expect(res.body.message).toMatch(/limit of 3/);
      expect(await counters(t, org)).toEqual(before);
      // A fitting increase still works, and a first report larger than the limit is refused too.
      await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
      await report({ organisation_id: await newOrg(), metric: 'ai_tokens', amount: 100_001 }).expect(402);
    });

    it('projects decrease, and never below 0 (clamped)', async () => {
      const org = await newOrg();
      await report({ organisation_id: org, metric: 'projects', amount: 2 }).expect(200);
      const down = await report({ organisation_id: org, metric: 'projects', amount: -1 }).expect(200);
      expect(down.body).toEqual({ metric: 'projects', used: 1, limit: 3, at_capacity: false });
      const clamped = await report({ organisation_id: org, metric: 'projects', amount: -5 }).expect(200);
      expect(clamped.body.used).toBe(0);
      const fresh = await newOrg();
      expect((await report({ organisation_id: fresh, metric: 'projects', amount: -1 }).expect(200)).body.used).toBe(0);
    });

    it('downgrade: usage above the new limit is kept, at capacity, increases refused, decreases work', async () => {
      const org = await newOrg();
      const member = await createUserWithSession(t, { org, role: 'member' });
      await setLicense(t, org, { tier: 'pro', status: 'active' });
      await report({ organisation_id: org, metric: 'projects', amount: 10 }).expect(200);
      // customer.subscription.deleted: the webhook sets the free tier.
      await setLicense(t, org, { tier: 'free', status: 'canceled' });
      const status = await t.http().get('/api/licensing/status').query({ organisation_id: org }).set(member.auth).expect(200);
      expect(status.body.usage.projects).toEqual({ used: 10, limit: 3, at_capacity: true });
      await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(402);
      const down = await report({ organisation_id: org, metric: 'projects', amount: -1 }).expect(200);
      expect(down.body).toEqual({ metric: 'projects', used: 9, limit: 3, at_capacity: true });
    });

    it('a lapsed paid license (past_due beyond grace) enforces the free limits', async () => {
      const org = await newOrg();
      await setLicense(t, org, { tier: 'pro', status: 'past_due', pastDueSince: nowS() - 8 * DAY });
      await report({ organisation_id: org, metric: 'projects', amount: 3 }).expect(200);
      await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(402);
      await setLicense(t, org, { tier: 'pro', status: 'active' });
      expect((await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200)).body.limit).toBe(25);
    });
  });

  describe('ai_tokens billing period', () => {
    it('free: a new calendar month starts at 0 and the previous month stays as history', async () => {
      const org = await newOrg();
      await setUsage(t, org, 'ai_tokens', 100_000, monthStartS(1));
      const res = await report({ organisation_id: org, metric: 'ai_tokens', amount: 10 }).expect(200);
      expect(res.body).toEqual({ metric: 'ai_tokens', used: 10, limit: 100_000, at_capacity: false });
      expect(await counters(t, org)).toEqual([
        { metric: 'ai_tokens', period_start: monthStartS(1), used: 100_000 },
        { metric: 'ai_tokens', period_start: monthStartS(), used: 10 },
      ]);
    });

    it('paid: the subscription period; a renewal (new current_period_start) starts at 0', async () => {
      const org = await newOrg();
      const first = nowS() - 40 * DAY;
      await setLicense(t, org, { tier: 'pro', status: 'active', periodStart: first, periodEnd: first + 30 * DAY });
      await report({ organisation_id: org, metric: 'ai_tokens', amount: 2_000_000 }).expect(200);
      await report({ organisation_id: org, metric: 'ai_tokens', amount: 1 }).expect(402);
      // customer.subscription.updated moves the period forward.
      const second = first + 30 * DAY;
      await setLicense(t, org, { tier: 'pro', status: 'active', periodStart: second, periodEnd: second + 30 * DAY });
      const res = await report({ organisation_id: org, metric: 'ai_tokens', amount: 5 }).expect(200);
      expect(res.body).toEqual({ metric: 'ai_tokens', used: 5, limit: 2_000_000, at_capacity: false });
      expect(await counters(t, org)).toEqual([
        { metric: 'ai_tokens', period_start: first, used: 2_000_000 },
        { metric: 'ai_tokens', period_start: second, used: 5 },
      ]);
    });
  });

  describe('idempotency', () => {
    it('the same key counts once and the repeat gets the first answer', async () => {
      const org = await newOrg();
      const body = { organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'create-project-42' };
      const first = await report(body).expect(200);
      await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
      const repeat = await report(body).expect(200);
      expect(repeat.body).toEqual(first.body);
      expect(first.body.used).toBe(1);
      expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 2 }]);
      // Keys are per organisation.
      const other = await newOrg();
      expect((await report({ ...body, organisation_id: other }).expect(200)).body.used).toBe(1);
    });

    it('a key reused with a different body → 409, nothing changed', async () => {
      const org = await newOrg();
      await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'k1' }).expect(200);
      for (const changed of [{ amount: 2 }, { metric: 'ai_tokens' }]) {
        const res = await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'k1', ...changed }).expect(409);
        expect(res.body).toEqual(errorBody(409, 'idempotency_key_reused'));
      }
      expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 1 }]);
    });

    it('a refused report stores no key: after capacity frees up, the same key succeeds once', async () => {
      const org = await newOrg();
      await setUsage(t, org, 'projects', 3);
      const body = { organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'retry-me' };
      await report(body).expect(402);
      await report({ organisation_id: org, metric: 'projects', amount: -1 }).expect(200);
      const ok = await report(body).expect(200);
      expect(ok.body.used).toBe(3);
      expect((await report(body).expect(200)).body).toEqual(ok.body);
      expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 3 }]);
    });

    it('concurrent repeats on two instances count once and all get the same answer', async () => {
      const org = await newOrg();
      const body = { organisation_id: org, metric: 'ai_tokens', amount: 700, idempotency_key: 'burst' };
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => report(body, i % 2 ? second : t)));
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      for (const a of answers) expect(a.body).toEqual({ metric: 'ai_tokens', used: 700, limit: 100_000, at_capacity: false });
      expect(await counters(t, org)).toEqual([{ metric: 'ai_tokens', period_start: monthStartS(), used: 700 }]);
    });

    it('a key older than 24 hours is forgotten and counts again; expired keys are swept', async () => {
      const org = await newOrg();
      const body = { organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'old' };
      await report(body).expect(200);
      await report({ ...body, idempotency_key: 'stale-other' }).expect(200);
      await t.db.query(`UPDATE usage_idempotency_keys SET created_at = now() - interval '25 hours' WHERE organisation_id = $1`, [org]);
      expect((await report(body).expect(200)).body.used).toBe(3);
      const keys = await t.db.query(`SELECT key FROM usage_idempotency_keys WHERE organisation_id = $1`, [org]);
      expect(keys).toEqual([{ key: 'old' }]);
    });

    it('expired keys are swept ten at a time per organisation, oldest first, by each keyed statement of it', async () => {
      const org = await newOrg();
      await t.db.query(
        `INSERT INTO usage_idempotency_keys (organisation_id, key, metric, amount, response, created_at)
         SELECT $1, 'expired-' || i, 'projects', 1, '{}', now() - interval '25 hours' - i * interval '1 minute' FROM generate_series(1, 13) i`,
        [org],
      );
      const left = async () => (await t.db.query(`SELECT key FROM usage_idempotency_keys WHERE organisation_id = $1 AND key LIKE 'expired-%' ORDER BY key`, [org])).map((k: { key: string }) => k.key);
      await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'fresh-1' }).expect(200);
      expect(await left()).toEqual(['expired-1', 'expired-2', 'expired-3']);
      await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'fresh-2' }).expect(200);
      expect(await left()).toEqual([]);
    });
  });

  it('50 simultaneous increases on two instances accept exactly the limit, never more', async () => {
    const org = await newOrg();
    await setLicense(t, org, { tier: 'pro', status: 'active' });
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => report({ organisation_id: org, metric: 'projects', amount: 1 }, i % 2 ? second : t)),
    );
    const codes = answers.map((r) => r.status);
    expect(codes.filter((c) => c === 200)).toHaveLength(25);
    expect(codes.filter((c) => c === 402)).toHaveLength(25);
    // Every accepted increase saw a distinct counter value: no two were applied to the same state.
    expect(answers.filter((r) => r.status === 200).map((r) => r.body.used).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
    expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 25 }]);
  });
});
