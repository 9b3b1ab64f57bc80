import { DAY, errorBody, nowS, setLicense } from './licensing-fixtures';
import { requestStatements } from './support/statements';
import { createUserWithSession, startTestApp, TestApp } from './support/test-app';

const MANY = 250;

/*
 * GET /api/me for a user of many organisations (issue #33: 3,000 organisations cost 3,000 status reads and
 * 335 KB per call). One statement whatever the count, a page at a time, each organisation's tier the one the
 * status read gives.
 */
describe('GET /api/me: many organisations', () => {
  let t: TestApp;
  let user: Awaited<ReturnType<typeof createUserWithSession>>;
  /** The user's organisations in membership order (oldest first), as seeded. */
  let seeded: { id: string; name: string; role: string }[];
  /** Organisations with a license other than free, by their place in `seeded`, and the tier /api/me must show. */
  const licensed: [number, Parameters<typeof setLicense>[2], string][] = [
    [0, { tier: 'pro', status: 'active' }, 'pro'],
    [98, { tier: 'team', status: 'past_due', pastDueSince: nowS() - DAY }, 'team'],
    [99, { tier: 'enterprise', status: 'trialing' }, 'enterprise'],
    [100, { tier: 'team', status: 'past_due', pastDueSince: nowS() - 30 * DAY, periodEnd: nowS() - 29 * DAY }, 'team'],
    [101, { tier: 'pro', status: 'canceled' }, 'pro'],
    // A first payment still pending grants nothing yet (spec §5).
    [199, { tier: 'team', status: 'incomplete' }, 'free'],
    [MANY - 1, { tier: 'enterprise', status: 'unpaid' }, 'enterprise'],
  ];

  beforeAll(async () => {
    t = await startTestApp();
    user = await createUserWithSession(t);
    // Bulk load by SQL, as spec §3 allows: names, then memberships a second apart (their order is the page order).
    seeded = await t.db.query(
      `WITH orgs AS (
         INSERT INTO organisations (name) SELECT 'Org ' || lpad(g::text, 4, '0') FROM generate_series(1, $2::int) g RETURNING id, name
       ), joined AS (
         INSERT INTO memberships (organisation_id, user_id, role, created_at)
         SELECT id, $1, (ARRAY['owner', 'admin', 'member'])[1 + substr(name, 5)::int % 3],
                now() - make_interval(secs => $2::int - substr(name, 5)::int)
         FROM orgs RETURNING organisation_id, role
       )
       SELECT o.id, o.name, j.role FROM orgs o JOIN joined j ON j.organisation_id = o.id ORDER BY o.name`,
      [user.id, MANY],
    );
    // A second subscription beside the live one: the best live one decides (pro over a deleted team).
    await setLicense(t, seeded[0].id, { tier: 'team', status: 'canceled', deleted: true, subscriptionId: 'sub_old_team' });
    for (const [index, row] of licensed) await setLicense(t, seeded[index].id, row);
    // Another user's organisation never shows.
    await createUserWithSession(t, { org: seeded[5].id, role: 'owner' });
  });
  afterAll(() => t.close());

  const me = (query: Record<string, string | number> = {}) => t.http().get('/api/me').query(query).set(user.auth);

  it('pages through every organisation in membership order, 100 by default, each with its role and the tier the status read gives', async () => {
    const pages: { organisations: { id: string; name: string; role: string; tier: string; external_id: null }[]; has_more: boolean }[] = [];
    let after: string | undefined;
    do {
      const res = await me(after ? { starting_after: after } : {}).expect(200);
      expect(res.body.user).toEqual({ id: user.id, email: user.email, external_id: null });
      pages.push(res.body);
      after = res.body.organisations.at(-1)?.id;
    } while (pages.at(-1)!.has_more);
    expect(pages.map((p) => [p.organisations.length, p.has_more])).toEqual([[100, true], [100, true], [50, false]]);

    const listed = pages.flatMap((p) => p.organisations);
    expect(listed.map(({ id, name, role }) => ({ id, name, role }))).toEqual(seeded);
    const tierOf = new Map(licensed.map(([index, , tier]) => [seeded[index].id, tier]));
    expect(listed.map((o) => o.tier)).toEqual(seeded.map((o) => tierOf.get(o.id) ?? 'free'));
    // The same tier as the one implementation of the license state, in every state seeded.
    for (const [index] of licensed) {
      const status = await t.http().get('/api/licensing/status').query({ organisation_id: seeded[index].id }).set(user.auth).expect(200);
      expect(listed[index].tier).toBe(status.body.license.tier);
    }
  });

  it('limit 1 to 100 pages the same list; a user without organisations gets an empty page', async () => {
    const first = await me({ limit: 7 }).expect(200);
    expect(first.body.organisations.map((o: { id: string }) => o.id)).toEqual(seeded.slice(0, 7).map((o) => o.id));
    expect(first.body.has_more).toBe(true);
    const next = await me({ limit: 7, starting_after: seeded[6].id }).expect(200);
    expect(next.body.organisations.map((o: { id: string }) => o.id)).toEqual(seeded.slice(7, 14).map((o) => o.id));
    const last = await me({ limit: 1, starting_after: seeded[MANY - 2].id }).expect(200);
    expect(last.body).toMatchObject({ organisations: [{ id: seeded[MANY - 1].id, tier: 'enterprise' }], has_more: false });
    const end = await me({ starting_after: seeded[MANY - 1].id }).expect(200);
    expect(end.body).toMatchObject({ organisations: [], has_more: false });

    const loner = await createUserWithSession(t);
    const alone = await t.http().get('/api/me').set(loner.auth).expect(200);
    expect(alone.body).toEqual({ user: { id: loner.id, email: loner.email, external_id: null }, organisations: [], has_more: false });
  });

  it('bad pagination → 400: limit out of 1..100 or not plain digits; a cursor that is not one of the caller’s organisations', async () => {
    for (const limit of ['0', '101', '1e2', ' 5', '-1']) {
      expect({ limit, body: (await me({ limit }).expect(400)).body }).toEqual({ limit, body: errorBody(400, 'validation_failed') });
    }
    expect((await me({ starting_after: 'not-a-uuid' }).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    const stranger = await createUserWithSession(t, { org: (await t.db.query(`INSERT INTO organisations (name) VALUES ('X') RETURNING id`))[0].id });
    const [theirs] = await t.db.query('SELECT organisation_id FROM memberships WHERE user_id = $1', [stranger.id]);
    expect((await me({ starting_after: theirs.organisation_id }).expect(400)).body).toEqual(errorBody(400, 'invalid_cursor'));
  });

  it('one statement for the page, whatever the number of organisations (it was one status read per organisation)', async () => {
    const few = await createUserWithSession(t, { org: seeded[0].id });
    const statementsOf = (work: () => Promise<unknown>) => requestStatements(t.app.getHttpServer(), work);
    const forFew = await statementsOf(() => t.http().get('/api/me').set(few.auth).expect(200));
    // What else uses the app's pool meanwhile (the job queue's minutely step) is not the request's.
    const forMany = await statementsOf(() => Promise.all([me().expect(200), t.db.query('SELECT 1 AS meanwhile')]));
    expect(forMany.map((s) => s.text)).toEqual(forFew.map((s) => s.text));
    expect(forMany).toHaveLength(2); // the session lookup and the page
  });
});
