import { errorBody } from './licensing-fixtures';
import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-reservations';
const uuid = expect.stringMatching(/^[0-9a-f-]{36}$/);
const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

/**
 * Reservations through HTTP against real PostgreSQL (spec §16.5): hold, commit (partial, repeated, after expiry),
 * release; holds counted by every report, check and read; expiry with no job; refusals that hold nothing; another
 * organisation's reservation never reached.
 */
describe('credits: reservations', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() } });
  });
  afterAll(async () => {
    await t.close();
  });

  const newOrg = async () => (await createOrganisation(t)).id;
  const reserve = (org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const commit = (id: string, body: Record<string, unknown>) => t.http().post(`/api/licensing/usage/reservations/${id}/commit`).set('X-Service-Key', KEY).send(body);
  const release = (id: string, query: Record<string, unknown> = {}) => t.http().delete(`/api/licensing/usage/reservations/${id}`).query(query).set('X-Service-Key', KEY);
  const report = (org: string, amount: number, more: Record<string, unknown> = {}) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount, ...more });
  const check = async (org: string, amount: number, metric = 'ai_tokens') =>
    (await t.http().get('/api/licensing/check').query({ organisation_id: org, metric, amount }).set('X-Service-Key', KEY).expect(200)).body.allowed;
  const credits = async (org: string) => (await t.http().get('/api/licensing/credits').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body.data[0];
  const entitlement = async (org: string) =>
    (await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body.limits.ai_tokens;
  const reservations = async (org: string) =>
    (await t.db.query(`SELECT amount, status, spent FROM usage_reservations WHERE organisation_id = $1 ORDER BY created_at`, [org])) as {
      amount: number;
      status: string;
      spent: number | null;
    }[];
  const used = async (org: string, metric = 'ai_tokens') =>
    ((await t.db.query(`SELECT COALESCE(sum(used), 0)::int AS used FROM usage_counters WHERE organisation_id = $1 AND metric = $2`, [org, metric])) as { used: number }[])[0].used;
  const entries = async (org: string) =>
    (await t.db.query(`SELECT kind, amount, grant_id IS NOT NULL AS "ofGrant", balance_after, reference FROM credit_ledger WHERE organisation_id = $1 AND kind <> 'grant' ORDER BY id`, [
      org,
    ])) as { kind: string; amount: number; ofGrant: boolean; balance_after: number; reference: string }[];
  const lapse = (id: string) => t.db.query(`UPDATE usage_reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, [id]);

  it('a hold takes room from every report, check and reservation, shows in the credits and entitlements reads; a partial commit counts what was spent and gives the rest back', async () => {
    const org = await newOrg();
    await giveCredits(t, org, 50);
    const { body: held } = await reserve(org, 120, { ttl_s: 60 }).expect(201);
    expect(held).toEqual({ id: uuid, organisation_id: org, metric: 'ai_tokens', amount: 120, expires_at: iso });
    const [stored] = await t.db.query(`SELECT expires_at, extract(epoch FROM expires_at - created_at)::int AS ttl FROM usage_reservations WHERE id = $1`, [held.id]);
    expect(stored).toEqual({ expires_at: new Date(held.expires_at), ttl: 60 });

    // 100 included + 50 balance − 120 held = 30.
    expect(await credits(org)).toMatchObject({ included: { limit: 100, used: 0, remaining: 100 }, balance: 50, reserved: 120, available: 30 });
    expect(await entitlement(org)).toMatchObject({ used: 0, balance: 50, reserved: 120, available: 30 });
    expect(await check(org, 30)).toBe(true);
    expect(await check(org, 31)).toBe(false);
    expect((await report(org, 31).expect(402)).body.code).toBe('insufficient_credits');
    expect((await reserve(org, 31).expect(402)).body).toEqual(errorBody(402, 'insufficient_credits'));
    expect((await report(org, 30).expect(200)).body).toMatchObject({ used: 30, balance: 50, available: 0 });

    // Spent 90 of 120: counted (10 past the included amount drawn from the grant), 30 given back.
    const { body: answer } = await commit(held.id, { amount: 90 }).expect(200);
    expect(answer).toEqual({ metric: 'ai_tokens', used: 120, limit: 100, at_capacity: true, balance: 30, available: 30 });
    expect(await reservations(org)).toEqual([{ amount: 120, status: 'committed', spent: 90 }]);
    expect(await credits(org)).toMatchObject({ balance: 30, reserved: 0, available: 30 });
    // One statement writes both (in either order).
    expect((await entries(org)).sort((x, y) => x.kind.localeCompare(y.kind))).toEqual([
      { kind: 'consume', amount: -20, ofGrant: true, balance_after: 30, reference: held.id },
      { kind: 'release', amount: 30, ofGrant: false, balance_after: 30, reference: held.id },
    ]);

    // Again: counted once, the same answer; another amount: 409; a release after it: 409.
    expect((await commit(held.id, { amount: 90 }).expect(200)).body).toEqual(answer);
    expect((await commit(held.id, { amount: 80 }).expect(409)).body).toEqual(errorBody(409, 'reservation_committed'));
    expect((await release(held.id).expect(409)).body).toEqual(errorBody(409, 'reservation_committed'));
    expect(await used(org)).toBe(120);
    expect(await ledgerMismatches(t, org)).toEqual([]);
  });

  it('a repeated commit is answered by its reservation however long after (the same amount: the same answer; another: 409); it takes no report key', async () => {
    const org = await newOrg();
    const { body: held } = await reserve(org, 10).expect(201);
    const { body: answer } = await commit(held.id, { amount: 7 }).expect(200);
    // A report keyed by the reservation's id is a report of its own: the commit keeps its answer with the reservation.
    expect((await report(org, 1, { idempotency_key: held.id }).expect(200)).body.used).toBe(8);
    // A day later, when any key of the organisation's reports has lapsed.
    await t.db.query(`UPDATE usage_idempotency_keys SET created_at = created_at - interval '25 hours' WHERE organisation_id = $1`, [org]);
    await t.db.query(`UPDATE usage_reservations SET created_at = created_at - interval '25 hours', settled_at = settled_at - interval '25 hours' WHERE id = $1`, [held.id]);
    expect((await commit(held.id, { amount: 7 }).expect(200)).body).toEqual(answer);
    expect((await commit(held.id, { amount: 6 }).expect(409)).body).toEqual(errorBody(409, 'reservation_committed'));
    expect(await used(org)).toBe(8);
  });

  it('refused whole when what the metric allows cannot cover it (402 insufficient_credits / limit_exceeded), nothing held; a bill metric always holds', async () => {
    const org = await newOrg();
    await giveCredits(t, org, 10);
    expect((await reserve(org, 111, { idempotency_key: 'too-much' }).expect(402)).body).toEqual(errorBody(402, 'insufficient_credits'));
    expect((await reserve(org, 11, { metric: 'api_s' }).expect(402)).body).toEqual(errorBody(402, 'limit_exceeded'));
    expect(await reservations(org)).toEqual([]);
    expect(await credits(org)).toMatchObject({ reserved: 0, available: 110 });
    // The refused key was not kept: the same key for what fits holds it.
    await reserve(org, 110, { idempotency_key: 'too-much' }).expect(201);
    await reserve(org, 10, { metric: 'api_s' }).expect(201);
    expect((await report(org, 1, { metric: 'api_s' }).expect(402)).body.code).toBe('limit_exceeded');
    await reserve(org, 1_000_000, { metric: 'bill_s' }).expect(201);
    expect((await report(org, 15, { metric: 'bill_s' }).expect(200)).body).toMatchObject({ used: 15, overage: 5 });
  });

  it('the same idempotency_key holds once and answers the same reservation', async () => {
    const org = await newOrg();
    const first = (await reserve(org, 40, { idempotency_key: 'job-1' }).expect(201)).body;
    expect((await reserve(org, 40, { idempotency_key: 'job-1' }).expect(201)).body).toEqual(first);
    expect((await reserve(org, 41, { idempotency_key: 'job-1' }).expect(409)).body.code).toBe('idempotency_key_reused');
    expect(await reservations(org)).toEqual([{ amount: 40, status: 'held', spent: null }]);
    expect(await credits(org)).toMatchObject({ reserved: 40, available: 60 });
  });

  it('a release gives the hold back (204, again 204); a commit after it 409; an unknown reservation 404', async () => {
    const org = await newOrg();
    await giveCredits(t, org, 20);
    const { body: held } = await reserve(org, 110).expect(201);
    expect(await credits(org)).toMatchObject({ reserved: 110, available: 10 });
    await release(held.id).expect(204);
    expect(await credits(org)).toMatchObject({ reserved: 0, available: 120 });
    await release(held.id).expect(204);
    expect((await commit(held.id, { amount: 1 }).expect(409)).body).toEqual(errorBody(409, 'reservation_released'));
    expect(await entries(org)).toEqual([{ kind: 'release', amount: 110, ofGrant: false, balance_after: 20, reference: held.id }]);
    expect(await used(org)).toBe(0);

    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await release(unknown).expect(404)).body).toEqual(errorBody(404, 'reservation_not_found'));
    expect((await commit(unknown, { amount: 1 }).expect(404)).body).toEqual(errorBody(404, 'reservation_not_found'));
    // A block metric's release writes no ledger entry (no credits are involved).
    const { body: blocked } = await reserve(org, 5, { metric: 'api_s' }).expect(201);
    await release(blocked.id).expect(204);
    expect(await entries(org)).toHaveLength(1);
    expect(await ledgerMismatches(t, org)).toEqual([]);
  });

  it('expiry needs no job: a lapsed hold stops counting; its commit is an ordinary report answered "expired": true (402 when it no longer fits)', async () => {
    const org = await newOrg();
    const { body: held } = await reserve(org, 80).expect(201);
    expect(await check(org, 21)).toBe(false);
    await lapse(held.id);
    expect(await check(org, 100)).toBe(true);
    expect(await credits(org)).toMatchObject({ reserved: 0, available: 100 });
    expect(await entitlement(org)).toMatchObject({ reserved: 0, available: 100 });
    // Another hold may now take the room the lapsed one had.
    const { body: other } = await reserve(org, 90).expect(201);
    // 10 left: the lapsed reservation's 80 no longer fits; nothing counted, and it can still be committed later.
    expect((await commit(held.id, { amount: 80 }).expect(402)).body.code).toBe('insufficient_credits');
    await release(other.id).expect(204);
    expect((await commit(held.id, { amount: 70 }).expect(200)).body).toEqual({
      metric: 'ai_tokens',
      used: 70,
      limit: 100,
      at_capacity: false,
      balance: 0,
      available: 30,
      expired: true,
    });
    expect((await commit(held.id, { amount: 70 }).expect(200)).body.expired).toBe(true);
    expect(await used(org)).toBe(70);
    // A lapsed hold gives nothing back: the only release entry is the live one's.
    expect(await entries(org)).toEqual([{ kind: 'release', amount: 90, ofGrant: false, balance_after: 0, reference: other.id }]);
  });

  it('a commit of 0 counts nothing and gives the whole hold back; more than reserved is 400, nothing changed', async () => {
    const org = await newOrg();
    const { body: held } = await reserve(org, 30).expect(201);
    expect((await commit(held.id, { amount: 31 }).expect(400)).body).toEqual(errorBody(400, 'reservation_exceeded'));
    expect(await reservations(org)).toEqual([{ amount: 30, status: 'held', spent: null }]);
    expect((await commit(held.id, { amount: 0 }).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 0, limit: 100, at_capacity: false, balance: 0, available: 100 });
    expect(await reservations(org)).toEqual([{ amount: 30, status: 'committed', spent: 0 }]);
  });

  it("one organisation never reaches another's reservation; sessions are refused; its holds never count against another", async () => {
    const [a, b] = [await newOrg(), await newOrg()];
    const { body: held } = await reserve(a, 100).expect(201);
    expect(await credits(b)).toMatchObject({ reserved: 0, available: 100 });
    expect((await report(b, 100).expect(200)).body.used).toBe(100);
    // Naming its own organisation, b's back end finds nothing of a's.
    expect((await commit(held.id, { amount: 10, organisation_id: b }).expect(404)).body).toEqual(errorBody(404, 'reservation_not_found'));
    expect((await release(held.id, { organisation_id: b }).expect(404)).body).toEqual(errorBody(404, 'reservation_not_found'));
    expect(await reservations(a)).toEqual([{ amount: 100, status: 'held', spent: null }]);
    expect(await used(a)).toBe(0);
    // A member's session is not a service key, on any of the routes.
    const member = await createUserWithSession(t, { org: a, role: 'owner' });
    const session = (req: ReturnType<ReturnType<TestApp['http']>['post']>) => req.set(member.auth);
    expect((await session(t.http().post('/api/licensing/usage/reservations')).send({ organisation_id: a, metric: 'ai_tokens', amount: 1 })).status).toBe(403);
    expect((await session(t.http().post(`/api/licensing/usage/reservations/${held.id}/commit`)).send({ amount: 1 })).status).toBe(403);
    expect((await t.http().delete(`/api/licensing/usage/reservations/${held.id}`).set(member.auth)).status).toBe(403);
    expect((await t.http().delete(`/api/licensing/usage/reservations/${held.id}`)).status).toBe(401);
    // Its own organisation named: as without.
    expect((await commit(held.id, { amount: 10, organisation_id: a }).expect(200)).body.used).toBe(10);
  });

  it('holds, commits and reports arriving at once are grouped as single reports are: each gets its own answer, the room is never overdrawn', async () => {
    const [org, other] = [await newOrg(), await newOrg()];
    await giveCredits(t, org, 50); // room: 100 included + 50
    const earlier = (await reserve(org, 20).expect(201)).body;
    const others = (await reserve(other, 5).expect(201)).body;
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, () => reserve(org, 10)),
      ...Array.from({ length: 3 }, () => report(org, 10)),
      commit(earlier.id, { amount: 15, organisation_id: org }),
      commit(others.id, { amount: 5, organisation_id: org }),
      reserve('00000000-0000-4000-8000-00000000beef', 1),
      ...Array.from({ length: 3 }, () => reserve(org, 10, { idempotency_key: 'grouped-once' })),
    ]);
    const statuses = answers.map((r) => r.status);
    // 150 of room: 20 held then committed as 15 (5 given back), 10 holds of 10, 3 reports of 10 and one keyed hold of 10:
    // 15 + 140 = 155 asked of 150, so exactly one hold or report of 10 is refused, and 5 stay available.
    expect(statuses.slice(13, 16)).toEqual([200, 404, 404]);
    expect(answers[14].body.code).toBe('reservation_not_found');
    expect(answers[15].body.code).toBe('organisation_not_found');
    const refused = statuses.slice(0, 13).filter((s) => s === 402).length + (statuses[16] === 402 ? 1 : 0);
    expect(refused).toBe(1);
    expect(new Set(answers.slice(16).map((r) => r.body.id)).size).toBe(1);
    expect(statuses.slice(16).every((s) => s === statuses[16])).toBe(true);
    const heldNow = (await reservations(org)).filter((r) => r.status === 'held').reduce((sum, r) => sum + Number(r.amount), 0);
    expect(heldNow + (await used(org))).toBe(145);
    expect(await credits(org)).toMatchObject({ available: 5 });
    expect(await reservations(other)).toEqual([{ amount: 5, status: 'held', spent: null }]);
    expect(await ledgerMismatches(t, org)).toEqual([]);
  });

  it('a group whose statement fails: every hold and commit of it answers 500, nothing held, committed or counted', async () => {
    const org = await newOrg();
    const held = (await reserve(org, 10).expect(201)).body;
    // The database refuses this organisation's counter writes (as a failing disk or a killed backend would); holds and commits write the counter.
    await t.db.query(`CREATE FUNCTION refuse_holds() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$`);
    await t.db.query(
      `CREATE TRIGGER refuse_holds BEFORE INSERT OR UPDATE ON usage_counters FOR EACH ROW WHEN (NEW.organisation_id = '${org}') EXECUTE FUNCTION refuse_holds()`,
    );
    try {
      const answers = await Promise.all([...Array.from({ length: 8 }, () => reserve(org, 1)), commit(held.id, { amount: 4 })]);
      expect(answers.map((r) => r.status)).toEqual(Array(9).fill(500));
    } finally {
      await t.db.query('DROP TRIGGER refuse_holds ON usage_counters');
      await t.db.query('DROP FUNCTION refuse_holds()');
    }
    expect(await reservations(org)).toEqual([{ amount: 10, status: 'held', spent: null }]);
    expect(await used(org)).toBe(0);
    expect((await commit(held.id, { amount: 4 }).expect(200)).body.used).toBe(4);
  });

  it('bad input: 400 in the shared error shape, nothing held', async () => {
    const org = await newOrg();
    const bad = async (body: Record<string, unknown>) => {
      const res = await t.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send(body).expect(400);
      expect(res.body).toEqual({ ...errorBody(400, expect.any(String)), message: expect.any(String) });
      return res.body;
    };
    const base = { organisation_id: org, metric: 'ai_tokens', amount: 5 };
    await bad({ ...base, amount: 0 });
    await bad({ ...base, amount: 1.5 });
    await bad({ ...base, amount: '5' });
    await bad({ ...base, ttl_s: 0 });
    await bad({ ...base, ttl_s: 3601 });
    await bad({ ...base, metric: 'nope' });
    await bad({ ...base, organisation_id: 'x' });
    await bad({ ...base, idempotency_key: '' });
    await bad({ ...base, extra: true });
    const { body: held } = await reserve(org, 5).expect(201);
    for (const body of [{}, { amount: -1 }, { amount: 1.5 }, { amount: 1, extra: 1 }, { amount: 1, organisation_id: 'x' }]) {
      expect((await commit(held.id, body).expect(400)).body.statusCode).toBe(400);
    }
    expect((await commit('not-a-uuid', { amount: 1 }).expect(400)).body.code).toBe('validation_failed');
    expect((await release('not-a-uuid').expect(400)).body.code).toBe('validation_failed');
    expect((await release(held.id, { organisation_id: 'x' }).expect(400)).body.code).toBe('validation_failed');
    expect(await reservations(org)).toEqual([{ amount: 5, status: 'held', spent: null }]);
    expect((await reserve('00000000-0000-4000-8000-000000000001', 5).expect(404)).body.code).toBe('organisation_not_found');
  });
});
