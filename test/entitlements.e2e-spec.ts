import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EntitlementsService } from '../src/licensing/entitlements.service';
import { DAY, errorBody, nowS, setLicense, setUsage } from './licensing-fixtures';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { requestStatements } from './support/statements';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'entitlements-key';
const FEATURES_NONE = { api_access: false, audit_log: false, sso: false };

type Limit = { used: number; limit: number; at_capacity: boolean; overage: 'block' | 'bill'; source: 'tier' | 'seats' | 'override' };
const limit = (used: number, max: number, extra: Partial<Limit> = {}): Limit => ({
  used,
  limit: max,
  at_capacity: used >= max,
  overage: 'block',
  source: 'tier',
  ...extra,
});

/** An override written as the provisioning API writes it (that API has its own spec: overrides.e2e-spec.ts). */
async function setOverride(t: TestApp, org: string, name: string, value: boolean | number, expiresInS?: number) {
  await t.db.query(
    `INSERT INTO entitlement_overrides (organisation_id, name, value, expires_at)
     VALUES ($1, $2, $3::jsonb, now() + make_interval(secs => $4::float8))`,
    [org, name, JSON.stringify(value), expiresInS ?? null],
  );
}

describe('GET /api/licensing/entitlements', () => {
  let t: TestApp;
  let plans: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
    const file = join(mkdtempSync(join(tmpdir(), 'tiers-')), 'tiers.json');
    writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
    plans = await startTestApp({ databaseUrl: t.databaseUrl, env: { SERVICE_API_KEYS: KEY, TIERS_FILE: file } });
  });
  afterAll(async () => {
    await plans.close();
    await t.close();
  });

  const read = (app: TestApp, org: string, auth: Record<string, string>) =>
    app.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(auth);
  const asService = { 'X-Service-Key': KEY };

  async function memberOfNewOrg() {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org, role: 'member' });
    return { org, user };
  }

  it('a new organisation: free, every feature false, every limit with its count, origin and overage; exactly the spec body', async () => {
    const { org, user } = await memberOfNewOrg();
    await setUsage(t, org, 'projects', 3);
    const res = await read(t, org, user.auth).expect(200);
    expect(res.body).toEqual({
      organisation_id: org,
      tier: 'free',
      is_active: true,
      is_expired: false,
      plan_version: 1,
      version: 0,
      seats: null,
      features: FEATURES_NONE,
      limits: { projects: limit(3, 3), ai_tokens: limit(0, 100_000), users: limit(1, 3) },
      overrides: [],
    });
    // A service key reads the same body; so does the service method other modules call.
    expect((await read(t, org, asService).expect(200)).body).toEqual(res.body);
    expect(await t.app.get(EntitlementsService).read(org)).toEqual(res.body);
  });

  it("an active paid tier's features and limits; while it is not active, the free tier's", async () => {
    const { org, user } = await memberOfNewOrg();
    await setLicense(t, org, { tier: 'enterprise', status: 'active' });
    let body = (await read(t, org, user.auth).expect(200)).body;
    expect(body).toMatchObject({ tier: 'enterprise', is_active: true, is_expired: false });
    expect(body.features).toEqual({ api_access: true, audit_log: true, sso: true });
    expect(body.limits.projects).toEqual(limit(0, 1000));

    await setLicense(t, org, { tier: 'enterprise', status: 'past_due', pastDueSince: nowS() - 30 * DAY });
    body = (await read(t, org, user.auth).expect(200)).body;
    expect(body).toMatchObject({ tier: 'enterprise', is_active: false, is_expired: true });
    expect(body.features).toEqual(FEATURES_NONE);
    expect(body.limits).toEqual({ projects: limit(0, 3), ai_tokens: limit(0, 100_000), users: limit(1, 3) });
  });

  it("a per-seat tier with a further metric and a billed overage (spec §11.1's example table)", async () => {
    const org = (await createOrganisation(plans)).id;
    const user = await createUserWithSession(plans, { org, role: 'owner' });
    await setLicense(plans, org, { tier: 'team', status: 'active' });
    await plans.db.query(`UPDATE provider_subscriptions SET seats = 7 WHERE organisation_id = $1`, [org]);
    await setUsage(plans, org, 'projects', 4);
    const body = (await read(plans, org, user.auth).expect(200)).body;
    expect(body).toEqual({
      organisation_id: org,
      tier: 'team',
      is_active: true,
      is_expired: false,
      plan_version: 2, // the default table's team was version 1, this table's is 2
      version: 0,
      seats: 7,
      features: { api_access: true, audit_log: true },
      limits: {
        projects: limit(4, 100),
        ai_tokens: limit(0, 10_000_000, { overage: 'bill' }),
        users: limit(1, 7, { source: 'seats' }),
        storage_gb: limit(0, 100),
      },
      overrides: [],
    });
  });

  it('live overrides replace the tier (also while the license is not active; over seats); expired ones apply nowhere', async () => {
    const org = (await createOrganisation(plans)).id;
    const user = await createUserWithSession(plans, { org, role: 'owner' });
    await setLicense(plans, org, { tier: 'team', status: 'active' });
    await plans.db.query(`UPDATE provider_subscriptions SET seats = 7 WHERE organisation_id = $1`, [org]);
    await setOverride(plans, org, 'users', 9);
    await setOverride(plans, org, 'audit_log', false);
    await setOverride(plans, org, 'storage_gb', 0, 3600);
    await setOverride(plans, org, 'projects', 1, -1); // expired a second ago
    let body = (await read(plans, org, user.auth).expect(200)).body;
    expect(body.features).toEqual({ api_access: true, audit_log: false });
    expect(body.limits.users).toEqual(limit(1, 9, { source: 'override' }));
    expect(body.limits.storage_gb).toEqual(limit(0, 0, { source: 'override' }));
    expect(body.limits.projects).toEqual(limit(0, 100));
    expect(body.overrides.map((o: { name: string }) => o.name)).toEqual(['audit_log', 'storage_gb', 'users']);
    expect(body.overrides[1]).toEqual({
      name: 'storage_gb',
      value: 0,
      expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      note: null,
      created_at: expect.stringMatching(/Z$/),
    });

    // Not active: the free tier's, overrides aside.
    await setLicense(plans, org, { tier: 'team', status: 'unpaid' });
    body = (await read(plans, org, user.auth).expect(200)).body;
    expect(body.features).toEqual({ api_access: false, audit_log: false });
    expect(body.limits.users).toEqual(limit(1, 9, { source: 'override' }));
    expect(body.limits.projects).toEqual(limit(0, 3));
    // The status read and the limit checks see the same limits in force.
    const status = (await plans.http().get('/api/licensing/status').query({ organisation_id: org }).set(user.auth).expect(200)).body;
    expect(status.usage.users).toEqual({ used: 1, limit: 9, at_capacity: false });
  });

  it('one database round trip, for a session, a service key and an unknown token alike', async () => {
    const { org, user } = await memberOfNewOrg();
    for (const auth of [user.auth, asService, { Authorization: 'Bearer unknown-token' }]) {
      expect(await requestStatements(t.app.getHttpServer(), () => read(t, org, auth), { roundTrips: true })).toHaveLength(1);
    }
  });

  it('version is the notification version', async () => {
    const { org, user } = await memberOfNewOrg();
    await t.db.query(`INSERT INTO notification_states (organisation_id, version) VALUES ($1, 4)`, [org]);
    expect((await read(t, org, user.auth).expect(200)).body.version).toBe(4);
  });

  describe('who may read', () => {
    it('401 without a credential, with an unknown, expired or revoked session, or an unknown service key', async () => {
      const { org, user } = await memberOfNewOrg();
      expect((await read(t, org, {}).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
      await read(t, org, { Authorization: 'Bearer nope' }).expect(401);
      expect((await read(t, org, { 'X-Service-Key': 'wrong' }).expect(401)).body).toEqual(errorBody(401, 'invalid_service_key'));
      await t.db.query(`UPDATE sessions SET revoked_at = now() WHERE user_id = $1`, [user.id]);
      expect((await read(t, org, user.auth).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
    });

    it("403 for a member of another organisation, the same for one that does not exist; a service key gets 404 for that", async () => {
      const { org } = await memberOfNewOrg();
      const other = await memberOfNewOrg();
      const forbidden = await read(t, org, other.user.auth).expect(403);
      expect(forbidden.body).toEqual(errorBody(403, 'organisation_forbidden'));
      expect((await read(t, randomUUID(), other.user.auth).expect(403)).body).toEqual(forbidden.body);
      expect((await read(t, randomUUID(), asService).expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
    });

    it('400 for a missing, malformed or repeated organisation_id', async () => {
      const { org, user } = await memberOfNewOrg();
      for (const query of ['', '?organisation_id=nope', `?organisation_id=${org}&organisation_id=${org}`]) {
        const res = await t.http().get(`/api/licensing/entitlements${query}`).set(user.auth).expect(400);
        expect(res.body).toEqual(errorBody(400, 'validation_failed'));
      }
    });
  });
});

describe('GET /api/licensing/check?feature=', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
  });
  afterAll(() => t.close());

  const check = (query: Record<string, string>, auth: Record<string, string>) => t.http().get('/api/licensing/check').query(query).set(auth);

  it('{"allowed"}: the feature in force, overrides included, for a member and a service key', async () => {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org });
    await setLicense(t, org, { tier: 'pro', status: 'active' });
    expect((await check({ organisation_id: org, feature: 'api_access' }, user.auth).expect(200)).body).toEqual({ allowed: true });
    expect((await check({ organisation_id: org, feature: 'sso' }, { 'X-Service-Key': KEY }).expect(200)).body).toEqual({ allowed: false });
    await setOverride(t, org, 'sso', true);
    expect((await check({ organisation_id: org, feature: 'sso' }, user.auth).expect(200)).body).toEqual({ allowed: true });
    // The metric form keeps its answer.
    expect((await check({ organisation_id: org, metric: 'projects', amount: '2' }, user.auth).expect(200)).body).toEqual({
      allowed: true,
      used: 0,
      limit: 25,
      remaining: 25,
    });
  });

  it('400 unknown_entitlement for a feature no tier names; 400 for both or neither of metric and feature; 403/404 as the read', async () => {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org });
    expect((await check({ organisation_id: org, feature: 'teleport' }, user.auth).expect(400)).body).toEqual(errorBody(400, 'unknown_entitlement'));
    expect((await check({ organisation_id: org, feature: 'projects' }, user.auth).expect(400)).body).toEqual(errorBody(400, 'unknown_entitlement'));
    expect((await check({ organisation_id: org, feature: 'Bad-Name' }, user.auth).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await check({ organisation_id: org, feature: 'sso', metric: 'projects' }, user.auth).expect(400)).body).toEqual(
      errorBody(400, 'validation_failed'),
    );
    expect((await check({ organisation_id: org }, user.auth).expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    const outsider = await createUserWithSession(t);
    await check({ organisation_id: org, feature: 'sso' }, outsider.auth).expect(403);
    await check({ organisation_id: randomUUID(), feature: 'sso' }, { 'X-Service-Key': KEY }).expect(404);
  });
});
