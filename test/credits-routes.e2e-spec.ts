import { decodeJwt } from 'jose';
import { errorBody } from './licensing-fixtures';
import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-routes';
const HOUR = 3_600_000;
const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

/**
 * The credits routes (spec §16.2) through HTTP against real PostgreSQL: the credits and ledger reads (member,
 * service key; another organisation's never), balances in the entitlements read and explain, and the admin grant
 * and void with their idempotency, validation and audit.
 */
describe('credits: reads and admin grants', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() } });
  });
  afterAll(async () => {
    await t.close();
  });

  const newOrg = async () => (await createOrganisation(t)).id;
  const report = (org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const credits = (org: string) => t.http().get('/api/licensing/credits').query({ organisation_id: org });
  const ledger = (org: string, query: Record<string, unknown> = {}) => t.http().get('/api/licensing/credits/ledger').query({ organisation_id: org, ...query });
  const grantRoute = (org: string) => t.http().post(`/api/admin/organisations/${org}/credits/grants`).set('X-Service-Key', KEY);
  const voidRoute = (org: string, grant: string) => t.http().post(`/api/admin/organisations/${org}/credits/grants/${grant}/void`).set('X-Service-Key', KEY);
  const count = async (table: string, org: string) =>
    ((await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE organisation_id = $1`, [org])) as { n: number }[])[0].n;
  const written = async (org: string) => ({ grants: await count('credit_grants', org), ledger: await count('credit_ledger', org), audit: await count('audit_log', org) });

  describe('GET /api/licensing/credits', () => {
    it('one entry per credits metric in table order: included, balance, reserved, available, the grants that count in draw order', async () => {
      const org = await newOrg();
      const inAnHour = new Date(Date.now() + HOUR);
      const later = await giveCredits(t, org, 40, { priority: 20, note: 'pack' });
      const first = await giveCredits(t, org, 25, { priority: 10, expiresAt: inAnHour, category: 'promotional' });
      const gpu = await giveCredits(t, org, 7, { metric: 'gpu_s' });
      // Not counting: expired (no job has run), voided, not yet effective, a metric whose policy is block.
      const expired = await giveCredits(t, org, 1000, { expiresAt: inAnHour });
      await t.db.query(`UPDATE credit_grants SET effective_at = now() - interval '2 hours', expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
      const voided = await giveCredits(t, org, 1000);
      await voidRoute(org, voided.id).expect(200);
      await giveCredits(t, org, 1000, { effectiveAt: inAnHour });
      await giveCredits(t, org, 1000, { metric: 'api_s' });
      await report(org, 130).expect(200);

      const { body } = await credits(org).set('X-Service-Key', KEY).expect(200);
      expect(body).toEqual({
        data: [
          {
            metric: 'ai_tokens',
            policy: 'credits',
            included: { limit: 100, used: 130, remaining: 0 },
            balance: 35,
            reserved: 0,
            available: 35,
            // The first grant (priority 10) was drawn on first and is used up.
            grants: [{ ...later, remaining: 35 }],
            auto_recharge: null,
          },
          {
            metric: 'gpu_s',
            policy: 'credits',
            included: { limit: 10, used: 0, remaining: 10 },
            balance: 7,
            reserved: 0,
            available: 17,
            grants: [gpu],
            auto_recharge: null,
          },
        ],
      });
      expect(first.remaining).toBe(25);
      expect(body.data[0].grants[0]).toEqual({
        id: later.id,
        metric: 'ai_tokens',
        amount: 40,
        remaining: 35,
        category: 'paid',
        priority: 20,
        source: 'top_up',
        effective_at: iso,
        expires_at: null,
        voided_at: null,
        note: 'pack',
        created_at: iso,
      });
      expect(await ledgerMismatches(t, org)).toEqual([]);
    });

    it('members read it with their session; a non-member gets 403, no caller 401, a service key 404 for an unknown organisation', async () => {
      const org = await newOrg();
      await giveCredits(t, org, 5);
      const member = await createUserWithSession(t, { org });
      const outsider = await createUserWithSession(t, { org: await newOrg() });
      const byKey = await credits(org).set('X-Service-Key', KEY).expect(200);
      expect((await credits(org).set(member.auth).expect(200)).body).toEqual(byKey.body);
      expect((await credits(org).set(outsider.auth).expect(403)).body).toEqual(errorBody(403, 'organisation_forbidden'));
      expect((await credits(org).expect(401)).body.code).toBe('unauthenticated');
      expect((await credits(org).set({ Authorization: 'Bearer not-a-session' }).expect(401)).body.code).toBe('unauthenticated');
      const unknown = '00000000-0000-4000-8000-000000000001';
      expect((await credits(unknown).set('X-Service-Key', KEY).expect(404)).body.code).toBe('organisation_not_found');
      expect((await credits(unknown).set(member.auth).expect(403)).body.code).toBe('organisation_forbidden');
      expect((await t.http().get('/api/licensing/credits').query({ organisation_id: 'nope' }).set('X-Service-Key', KEY).expect(400)).body.code).toBe('validation_failed');
    });

    it('a tier whose metrics are not credits lists nothing, its grants kept for when they count', async () => {
      const table = creditsTiersFile({ tiers: { free: { projects: 3, ai_tokens: 100, users: 3 } } });
      const plain = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: table }, databaseUrl: t.databaseUrl });
      try {
        const org = await newOrg();
        await giveCredits(t, org, 50);
        expect((await plain.http().get('/api/licensing/credits').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body).toEqual({ data: [] });
        expect((await credits(org).set('X-Service-Key', KEY).expect(200)).body.data[0].balance).toBe(50);
      } finally {
        await plain.close();
      }
    });
  });

  describe('GET /api/licensing/credits/ledger', () => {
    it('newest first, every movement with its signed amount, grant, balance after and reference; pages by starting_after; filters by metric', async () => {
      const org = await newOrg();
      const a = await giveCredits(t, org, 50, { priority: 1, reference: 'cs_ledger_a' });
      const b = await giveCredits(t, org, 50, { priority: 2, reference: 'cs_ledger_b' });
      await giveCredits(t, org, 3, { metric: 'gpu_s', reference: 'cs_ledger_gpu' });
      await report(org, 170, { idempotency_key: 'big' }).expect(200);
      await voidRoute(org, b.id).expect(200);

      const { body } = await ledger(org).set('X-Service-Key', KEY).expect(200);
      const entry = (kind: string, amount: number, grant: string, balance: number, reference: string, metric = 'ai_tokens') => ({
        id: expect.stringMatching(/^\d+$/),
        at: iso,
        metric,
        kind,
        amount,
        grant_id: grant,
        balance_after: balance,
        reference,
      });
      expect(body).toEqual({
        data: [
          entry('void', -30, b.id, 0, 'service_key:key1'),
          entry('consume', -20, b.id, 30, 'big'),
          entry('consume', -50, a.id, 50, 'big'),
          entry('grant', 3, expect.any(String), 3, 'cs_ledger_gpu', 'gpu_s'),
          entry('grant', 50, b.id, 100, 'cs_ledger_b'),
          entry('grant', 50, a.id, 50, 'cs_ledger_a'),
        ],
        has_more: false,
      });
      const ids = body.data.map((e: { id: string }) => e.id);
      const first = await ledger(org, { limit: 2 }).set('X-Service-Key', KEY).expect(200);
      expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 2));
      expect(first.body.has_more).toBe(true);
      const next = await ledger(org, { limit: 4, starting_after: ids[1] }).set('X-Service-Key', KEY).expect(200);
      expect(next.body).toEqual({ data: body.data.slice(2, 6), has_more: false });
      const gpu = await ledger(org, { metric: 'gpu_s' }).set('X-Service-Key', KEY).expect(200);
      expect(gpu.body).toEqual({ data: [body.data[3]], has_more: false });
      expect(await ledgerMismatches(t, org)).toEqual([]);
    });

    it("another organisation's entries are never visible: its member reads only its own, a non-member gets 403; bad queries 400", async () => {
      const org = await newOrg();
      const other = await newOrg();
      await giveCredits(t, org, 10);
      await giveCredits(t, other, 20);
      const member = await createUserWithSession(t, { org });
      const mine = await ledger(org).set(member.auth).expect(200);
      expect(mine.body.data.map((e: { amount: number }) => e.amount)).toEqual([10]);
      expect((await ledger(other).set(member.auth).expect(403)).body.code).toBe('organisation_forbidden');
      expect((await ledger(org).expect(401)).body.code).toBe('unauthenticated');
      for (const query of [{ limit: 0 }, { limit: 101 }, { starting_after: 'x' }, { metric: 'Not A Metric' }, { surprise: 1 }]) {
        expect((await ledger(org, query).set('X-Service-Key', KEY).expect(400)).body.code).toBe('validation_failed');
      }
    });
  });

  describe('POST /api/admin/organisations/{id}/credits/grants', () => {
    const body = (more: Record<string, unknown> = {}) => ({ metric: 'ai_tokens', amount: 500, idempotency_key: 'deal-1', ...more });

    it('201 the grant, audited with its ledger entry in one transaction; the same key again 200 the same grant; another body 409', async () => {
      const org = await newOrg();
      const expiresAt = new Date(Date.now() + 48 * HOUR).toISOString();
      const made = await grantRoute(org).send(body({ expires_at: expiresAt, note: 'Sorry for the outage', priority: 5 })).expect(201);
      expect(made.body).toEqual({
        id: expect.any(String),
        metric: 'ai_tokens',
        amount: 500,
        remaining: 500,
        category: 'promotional',
        priority: 5,
        source: 'admin',
        effective_at: iso,
        expires_at: expiresAt,
        voided_at: null,
        note: 'Sorry for the outage',
        created_at: iso,
      });
      const again = await grantRoute(org).send(body({ expires_at: expiresAt, note: 'Sorry for the outage', priority: 5 })).expect(200);
      expect(again.body).toEqual(made.body);
      // The same time written another way is the same body.
      await grantRoute(org).send(body({ expires_at: expiresAt.replace('Z', '+00:00'), note: 'Sorry for the outage', priority: 5 })).expect(200);
      for (const other of [body({ amount: 501 }), body({ expires_at: expiresAt, note: 'Sorry for the outage', priority: 6 }), body({ metric: 'gpu_s' })]) {
        expect((await grantRoute(org).send(other).expect(409)).body).toEqual(errorBody(409, 'idempotency_conflict'));
      }
      expect(await written(org)).toEqual({ grants: 1, ledger: 1, audit: 1 });
      const [audit] = await t.db.query(`SELECT actor, action, before, after FROM audit_log WHERE organisation_id = $1`, [org]);
      expect(audit).toEqual({ actor: 'service_key:key1', action: 'credit_grant.created', before: null, after: made.body });
      const [entry] = await t.db.query(`SELECT kind, amount, grant_id, reference FROM credit_ledger WHERE organisation_id = $1`, [org]);
      expect(entry).toEqual({ kind: 'grant', amount: 500, grant_id: made.body.id, reference: 'service_key:key1' });
      // A key is per organisation: another organisation's grant with it is its own.
      const other = await newOrg();
      expect((await grantRoute(other).send(body()).expect(201)).body.id).not.toBe(made.body.id);
    });

    it('ten requests with one key at once make one grant, one ledger entry and one audit entry', async () => {
      const org = await newOrg();
      const results = await Promise.all(Array.from({ length: 10 }, () => grantRoute(org).send(body({ idempotency_key: 'race' }))));
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      expect(await written(org)).toEqual({ grants: 1, ledger: 1, audit: 1 });
    });

    it('the grant counts at once: the next report past the included amount draws on it', async () => {
      const org = await newOrg();
      await grantRoute(org).send(body({ amount: 20, category: 'paid' })).expect(201);
      expect((await report(org, 120).expect(200)).body).toMatchObject({ used: 120, balance: 0, available: 0 });
      await report(org, 1).expect(402);
    });

    it.each([
      ['an unknown metric', { metric: 'gpu_seconds' }, 'invalid_credit_metric'],
      ['a metric not counted per period', { metric: 'projects' }, 'invalid_credit_metric'],
      ['an amount of 0', { amount: 0 }, 'validation_failed'],
      ['an amount above 10^12', { amount: 1e12 + 1 }, 'validation_failed'],
      ['a fractional amount', { amount: 2.5 }, 'validation_failed'],
      ['an amount as a string', { amount: '500' }, 'validation_failed'],
      ['an expiry in the past', { expires_at: new Date(Date.now() - 60_000).toISOString() }, 'validation_failed'],
      ['an expiry before its start', { effective_at: new Date(Date.now() + 2 * HOUR).toISOString(), expires_at: new Date(Date.now() + HOUR).toISOString() }, 'validation_failed'],
      ['a time that is not one', { expires_at: 'tomorrow' }, 'validation_failed'],
      ['a note over 500 characters', { note: 'x'.repeat(501) }, 'validation_failed'],
      ['a priority of 101', { priority: 101 }, 'validation_failed'],
      ['an unknown category', { category: 'gift' }, 'validation_failed'],
      ['no idempotency key', { idempotency_key: undefined }, 'validation_failed'],
      ['an unknown field', { source: 'top_up' }, 'validation_failed'],
    ])('%s: 400, nothing written', async (_label, more, code) => {
      const org = await newOrg();
      const res = await grantRoute(org).send(body(more)).expect(400);
      expect(res.body).toEqual(errorBody(400, code));
      expect(await written(org)).toEqual({ grants: 0, ledger: 0, audit: 0 });
    });

    it('a note of exactly 500 characters and an amount of 10^12 are accepted', async () => {
      const org = await newOrg();
      await grantRoute(org).send(body({ note: 'x'.repeat(500), amount: 1e12 })).expect(201);
    });

    it('an unknown organisation: 404; no service key: 401; a user session: 403; nothing written', async () => {
      const unknown = '00000000-0000-4000-8000-000000000002';
      expect((await grantRoute(unknown).send(body()).expect(404)).body.code).toBe('organisation_not_found');
      const org = await newOrg();
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      await t.http().post(`/api/admin/organisations/${org}/credits/grants`).send(body()).expect(401);
      await t.http().post(`/api/admin/organisations/${org}/credits/grants`).set(owner.auth).send(body()).expect(403);
      expect(await written(org)).toEqual({ grants: 0, ledger: 0, audit: 0 });
      expect(await count('credit_grants', unknown)).toBe(0);
    });
  });

  describe('POST …/credits/grants/{grant_id}/void', () => {
    it('200 the grant with remaining 0 and a void entry for what was left, audited; again 200 unchanged, nothing more written', async () => {
      const org = await newOrg();
      const grant = (await grantRoute(org).send({ metric: 'ai_tokens', amount: 80, idempotency_key: 'to-void' }).expect(201)).body;
      await report(org, 130).expect(200);
      const voided = await voidRoute(org, grant.id).expect(200);
      expect(voided.body).toEqual({ ...grant, remaining: 0, voided_at: iso });
      expect(await t.db.query(`SELECT kind, amount, balance_after, reference FROM credit_ledger WHERE organisation_id = $1 ORDER BY id`, [org])).toEqual([
        { kind: 'grant', amount: 80, balance_after: 80, reference: 'service_key:key1' },
        { kind: 'consume', amount: -30, balance_after: 50, reference: null },
        { kind: 'void', amount: -50, balance_after: 0, reference: 'service_key:key1' },
      ]);
      const [audit] = await t.db.query(`SELECT action, before, after FROM audit_log WHERE organisation_id = $1 AND action = 'credit_grant.voided'`, [org]);
      expect(audit).toEqual({ action: 'credit_grant.voided', before: { ...grant, remaining: 50 }, after: voided.body });
      expect((await voidRoute(org, grant.id).expect(200)).body).toEqual(voided.body);
      expect(await written(org)).toEqual({ grants: 1, ledger: 3, audit: 2 });
      expect((await credits(org).set('X-Service-Key', KEY).expect(200)).body.data[0]).toMatchObject({ balance: 0, grants: [] });
      await report(org, 1).expect(402);
      expect(await ledgerMismatches(t, org)).toEqual([]);
    });

    it("another organisation's grant and an unknown one: 404 grant_not_found, nothing changed; a bad id 400", async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await giveCredits(t, other, 10);
      expect((await voidRoute(org, theirs.id).expect(404)).body).toEqual(errorBody(404, 'grant_not_found'));
      expect((await voidRoute(org, '00000000-0000-4000-8000-000000000003').expect(404)).body.code).toBe('grant_not_found');
      expect((await voidRoute('00000000-0000-4000-8000-000000000004', theirs.id).expect(404)).body.code).toBe('organisation_not_found');
      expect((await voidRoute(org, 'nope').expect(400)).body.code).toBe('validation_failed');
      expect(await t.db.query(`SELECT remaining, voided_at FROM credit_grants WHERE id = $1`, [theirs.id])).toEqual([{ remaining: 10, voided_at: null }]);
      expect(await written(other)).toEqual({ grants: 1, ledger: 1, audit: 0 });
    });

    it('a grant past its expiry (no job yet) is written off as expired, and voided', async () => {
      const org = await newOrg();
      const grant = await giveCredits(t, org, 10, { expiresAt: new Date(Date.now() + HOUR) });
      await t.db.query(`UPDATE credit_grants SET effective_at = now() - interval '2 hours', expires_at = now() - interval '1 second' WHERE id = $1`, [grant.id]);
      expect((await voidRoute(org, grant.id).expect(200)).body).toMatchObject({ remaining: 0, voided_at: iso });
      expect(await t.db.query(`SELECT kind, amount FROM credit_ledger WHERE grant_id = $1 ORDER BY id`, [grant.id])).toEqual([
        { kind: 'grant', amount: 10 },
        { kind: 'expire', amount: -10 },
      ]);
    });
  });

  describe('balances elsewhere', () => {
    it('the entitlements read gives each credits metric balance, reserved and available; the signed token carries none of them', async () => {
      const org = await newOrg();
      await giveCredits(t, org, 60);
      await report(org, 30).expect(200);
      const { body } = await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200);
      expect(body.limits.ai_tokens).toEqual({ used: 30, limit: 100, at_capacity: false, overage: 'credits', source: 'tier', balance: 60, reserved: 0, available: 130 });
      expect(body.limits.gpu_s).toEqual({ used: 0, limit: 10, at_capacity: false, overage: 'credits', source: 'tier', balance: 0, reserved: 0, available: 10 });
      expect(body.limits.api_s).toEqual({ used: 0, limit: 10, at_capacity: false, overage: 'block', source: 'tier' });
      expect(body.limits.bill_s).not.toHaveProperty('balance');
      const member = await createUserWithSession(t, { org });
      expect((await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(member.auth).expect(200)).body.limits.ai_tokens.balance).toBe(60);
      const signed = await t.http().get('/api/licensing/entitlements/token').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200);
      const claims = decodeJwt(signed.body.token) as { limits: Record<string, Record<string, unknown>> };
      expect(claims.limits.ai_tokens).toEqual({ limit: 100, overage: 'credits', source: 'tier' });
      expect(JSON.stringify(claims)).not.toMatch(/balance|reserved|available/);
    });

    it('explain lists the grants that count, by metric in draw order; not those of a block metric, expired or voided', async () => {
      const org = await newOrg();
      const second = await giveCredits(t, org, 10, { priority: 60 });
      const first = await giveCredits(t, org, 10, { priority: 40, note: 'first' });
      const gpu = await giveCredits(t, org, 10, { metric: 'gpu_s' });
      await giveCredits(t, org, 10, { metric: 'api_s' });
      const voided = await giveCredits(t, org, 10);
      await voidRoute(org, voided.id).expect(200);
      const { body } = await t.http().get('/api/licensing/explain').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200);
      const shown = (g: typeof first) => ({
        id: g.id,
        metric: g.metric,
        amount: g.amount,
        remaining: g.remaining,
        category: g.category,
        priority: g.priority,
        source: g.source,
        effective_at: g.effective_at,
        expires_at: g.expires_at,
        note: g.note,
      });
      expect(body.grants).toEqual([shown(first), shown(second), shown(gpu)]);
    });

    it('the usage answer of a credits metric gains balance and available after the report', async () => {
      const org = await newOrg();
      await giveCredits(t, org, 25);
      expect((await report(org, 110).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 110, limit: 100, at_capacity: true, balance: 15, available: 15 });
    });
  });
});
