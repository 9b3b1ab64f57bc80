import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdentityService } from '../src/identity/identity.service';
import { DAY, errorBody, monthStartS, nowS, setLicense, setUsage } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const FREE = { projects: 3, ai_tokens: 100_000, users: 3 };
const PRO = { projects: 25, ai_tokens: 2_000_000, users: 10 };

/** The whole expected body, for toEqual. */
function body(tier: string, is_active: boolean, is_expired: boolean, limits: typeof FREE, used = { projects: 0, ai_tokens: 0, users: 1 }) {
  const metric = (m: keyof typeof FREE) => ({ used: used[m], limit: limits[m], at_capacity: used[m] >= limits[m] });
  return {
    license: { is_active, is_expired, tier },
    usage: { projects: metric('projects'), ai_tokens: metric('ai_tokens'), users: metric('users') },
  };
}

describe('GET /api/licensing/status', () => {
  let t: TestApp;
  // Two more instances on the same database: a 2-day grace period, and a custom tier table. They live as
  // long as `t`: passport strategies are process-global, so closing one early would leave the others
  // authenticating sessions through its closed pool.
  let short: TestApp;
  let custom: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
    short = await startTestApp({ databaseUrl: t.databaseUrl, env: { GRACE_PERIOD_DAYS: '2' } });
    const file = join(mkdtempSync(join(tmpdir(), 'tiers-')), 'tiers.json');
    writeFileSync(file, JSON.stringify({ free: { projects: 1, ai_tokens: 10, users: 2 }, gold: { projects: 9, ai_tokens: 99, users: 5 } }));
    custom = await startTestApp({ databaseUrl: t.databaseUrl, env: { TIERS_FILE: file } });
  });
  afterAll(async () => {
    await custom.close();
    await short.close();
    await t.close();
  });

  async function memberOfNewOrg() {
    const org = await createOrganisation(t);
    const user = await createUserWithSession(t, { org: org.id, role: 'member' });
    return { org, user };
  }
  const status = (orgId: string, auth: Record<string, string>) =>
    t.http().get('/api/licensing/status').query({ organisation_id: orgId }).set(auth);

  it('200: an organisation without a license row is free, active, not expired, and nothing else is in the body', async () => {
    const { org, user } = await memberOfNewOrg();
    const res = await status(org.id, user.auth).expect(200);
    expect(res.body).toEqual(body('free', true, false, FREE));
  });

  describe('request errors', () => {
    it('400 when organisation_id is missing, not a UUID, or given twice', async () => {
      const { org, user } = await memberOfNewOrg();
      for (const url of [
        '/api/licensing/status',
        '/api/licensing/status?organisation_id=',
        '/api/licensing/status?organisation_id=not-a-uuid',
        `/api/licensing/status?organisation_id=${org.id}&organisation_id=${org.id}`,
        `/api/licensing/status?organisation_id[]=${org.id}`,
      ]) {
        const res = await t.http().get(url).set(user.auth);
        expect([url, res.status]).toEqual([url, 400]);
        expect(res.body).toEqual(errorBody(400, 'validation_failed'));
      }
    });

    it('401 without a valid session', async () => {
      const { org } = await memberOfNewOrg();
      expect((await status(org.id, {}).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
      await status(org.id, { Authorization: 'Bearer nope' }).expect(401);
      // A service key is not a session.
      await status(org.id, { 'X-Service-Key': 'anything' }).expect(401);
      await status(org.id, { Authorization: `Bearer ${'a'.repeat(300)}` }).expect(401);
      // No session is 401 even when the query is also wrong.
      expect((await t.http().get('/api/licensing/status?organisation_id=nope').expect(401)).body).toEqual(
        errorBody(401, 'unauthenticated'),
      );
    });

    // This route verifies the session inside its own statement (one round trip), not through the global guard.
    it('401 once the session expired or was revoked, for a member too', async () => {
      const { org } = await memberOfNewOrg();
      const expired = await createUserWithSession(t, { org: org.id });
      const revoked = await createUserWithSession(t, { org: org.id });
      await status(org.id, expired.auth).expect(200);
      await status(org.id, revoked.auth).expect(200);
      await t.db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [expired.id]);
      await t.db.query(`UPDATE sessions SET revoked_at = now() WHERE user_id = $1`, [revoked.id]);
      expect((await status(org.id, expired.auth).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
      expect((await status(org.id, revoked.auth).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
    });

    it('accepts the session cookie as well as the bearer header', async () => {
      const { org, user } = await memberOfNewOrg();
      const res = await status(org.id, { Cookie: `theme=dark; session=${encodeURIComponent(user.token)}` }).expect(200);
      expect(res.body).toEqual(body('free', true, false, FREE));
    });

    it('403 for a non-member, with the same body as for an organisation that does not exist', async () => {
      const { org } = await memberOfNewOrg();
      const outsider = await createUserWithSession(t);
      const forbidden = await status(org.id, outsider.auth).expect(403);
      const missing = await status(randomUUID(), outsider.auth).expect(403);
      expect(forbidden.body).toEqual(errorBody(403, 'organisation_forbidden'));
      expect(missing.body).toEqual(forbidden.body);
    });
  });

  describe('at_capacity', () => {
    it.each([
      [FREE.projects - 1, false],
      [FREE.projects, true],
      [FREE.projects + 1, true],
    ])('projects used %i of 3 → at_capacity %s', async (used, atCapacity) => {
      const { org, user } = await memberOfNewOrg();
      await setUsage(t, org.id, 'projects', used);
      const res = await status(org.id, user.auth).expect(200);
      expect(res.body.usage.projects).toEqual({ used, limit: FREE.projects, at_capacity: atCapacity });
    });

    it.each([
      [FREE.ai_tokens - 1, false],
      [FREE.ai_tokens, true],
      [FREE.ai_tokens + 1, true],
    ])('ai_tokens used %i of 100000 in this calendar month → at_capacity %s', async (used, atCapacity) => {
      const { org, user } = await memberOfNewOrg();
      await setUsage(t, org.id, 'ai_tokens', used, monthStartS());
      const res = await status(org.id, user.auth).expect(200);
      expect(res.body.usage.ai_tokens).toEqual({ used, limit: FREE.ai_tokens, at_capacity: atCapacity });
    });

    it('users counts memberships: 2, 3 and 4 of 3', async () => {
      const { org, user } = await memberOfNewOrg();
      const identity = t.app.get(IdentityService);
      const expected: [number, boolean][] = [
        [2, false],
        [3, true],
        [4, true],
      ];
      for (const [used, atCapacity] of expected) {
        const other = await identity.createUser(`u${used}.${randomUUID()}@example.com`);
        if (used <= FREE.users) {
          await identity.addMember(org.id, other.id, 'member');
        } else {
          // Beyond the limit only as members kept after a downgrade: addMember itself refuses (402).
          await expect(identity.addMember(org.id, other.id, 'member')).rejects.toMatchObject({ code: 'limit_exceeded' });
          await t.db.query(`INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, 'member')`, [org.id, other.id]);
        }
        const res = await status(org.id, user.auth).expect(200);
        expect(res.body.usage.users).toEqual({ used, limit: FREE.users, at_capacity: atCapacity });
      }
    });
  });

  describe('license derived from the subscriptions the webhook keeps', () => {
    const grace = 7 * DAY;
    it.each([
      // status, how long ago it became past_due (s), is_active, is_expired, limits in force. The age, not the
      // time: a table is built when the file loads, and on a loaded machine its group reaches this test minutes later.
      ['active', 'period running', null, true, false, PRO],
      ['trialing', 'period running', null, true, false, PRO],
      ['past_due', 'since a day', 1 * DAY, true, false, PRO],
      ['past_due', 'just inside grace', grace - 120, true, false, PRO],
      ['past_due', 'just beyond grace', grace + 120, false, true, FREE],
      ['unpaid', 'period ended', null, false, true, FREE],
      ['incomplete_expired', 'never paid', null, false, true, FREE],
      ['canceled', 'before its deletion event', null, false, true, FREE],
      ['paused', 'paused', null, false, true, FREE],
    ])('pro + %s (%s) → is_active %s, is_expired %s', async (subStatus, _label, pastDueFor, active, expired, limits) => {
      const { org, user } = await memberOfNewOrg();
      const pastDueSince = pastDueFor === null ? null : nowS() - (pastDueFor as number);
      // The provider moves the period forward at each renewal attempt: the period end says nothing of grace.
      await setLicense(t, org.id, { tier: 'pro', status: subStatus as string, pastDueSince });
      const res = await status(org.id, user.auth).expect(200);
      // A lapsed paid license still reports its paid tier, with the free limits in force.
      expect(res.body).toEqual(body('pro', active as boolean, expired as boolean, limits as typeof FREE));
    });

    it('an incomplete subscription (first payment pending) grants nothing yet: still free and active', async () => {
      const { org, user } = await memberOfNewOrg();
      await setLicense(t, org.id, { tier: 'pro', status: 'incomplete' });
      expect((await status(org.id, user.auth).expect(200)).body).toEqual(body('free', true, false, FREE));
    });

    it('free after customer.subscription.deleted is active and not expired', async () => {
      const { org, user } = await memberOfNewOrg();
      await setLicense(t, org.id, { tier: 'pro', status: 'canceled', periodEnd: nowS() - 30 * DAY, deleted: true });
      expect((await status(org.id, user.auth).expect(200)).body).toEqual(body('free', true, false, FREE));
    });

    it('follows the best live subscription: the highest tier among the live ones, else the newest one', async () => {
      const { org, user } = await memberOfNewOrg();
      await setLicense(t, org.id, { tier: 'pro', status: 'active', subscriptionId: `sub_a_${org.id}` });
      await setLicense(t, org.id, { tier: 'team', status: 'active', subscriptionId: `sub_b_${org.id}` });
      expect((await status(org.id, user.auth).expect(200)).body.license).toEqual({ tier: 'team', is_active: true, is_expired: false });
      // The team one lapses beyond grace: the live pro one decides.
      await setLicense(t, org.id, { tier: 'team', status: 'past_due', pastDueSince: nowS() - 30 * DAY, subscriptionId: `sub_b_${org.id}` });
      expect((await status(org.id, user.auth).expect(200)).body).toEqual(body('pro', true, false, PRO));
      // Deleting the pro one leaves the lapsed team one: its tier, not active, expired.
      await setLicense(t, org.id, { tier: 'pro', status: 'canceled', deleted: true, subscriptionId: `sub_a_${org.id}` });
      expect((await status(org.id, user.auth).expect(200)).body).toEqual(body('team', false, true, FREE));
    });

    it('a tier no longer in the tier table is reported, with the free limits', async () => {
      const { org, user } = await memberOfNewOrg();
      await setLicense(t, org.id, { tier: 'legacy-gold', status: 'active' });
      expect((await status(org.id, user.auth).expect(200)).body).toEqual(body('legacy-gold', true, false, FREE));
    });

    it('counts ai_tokens of a paid license within the subscription period, not the calendar month', async () => {
      const { org, user } = await memberOfNewOrg();
      const periodStart = nowS() - 3 * DAY;
      await setLicense(t, org.id, { tier: 'pro', status: 'active', periodStart });
      await setUsage(t, org.id, 'ai_tokens', 777, periodStart);
      await setUsage(t, org.id, 'ai_tokens', 555, monthStartS());
      const res = await status(org.id, user.auth).expect(200);
      expect(res.body.usage.ai_tokens).toEqual({ used: 777, limit: PRO.ai_tokens, at_capacity: false });
    });
  });

  describe('GRACE_PERIOD_DAYS', () => {
    it.each([
      // how long ago it became past_due (s), computed into a time when the test runs, not when the file loads
      ['2 minutes inside', 2 * DAY - 120, true, false],
      ['2 minutes beyond', 2 * DAY + 120, false, true],
    ])('past_due %s a 2-day grace: is_active %s, is_expired %s', async (_label, pastDueFor, active, expired) => {
      const { org, user } = await memberOfNewOrg();
      await setLicense(t, org.id, { tier: 'pro', status: 'past_due', pastDueSince: nowS() - pastDueFor });
      const res = await short.http().get('/api/licensing/status').query({ organisation_id: org.id }).set(user.auth).expect(200);
      expect(res.body.license).toEqual({ is_active: active, is_expired: expired, tier: 'pro' });
      // The same row under the default 7 days is still in grace.
      expect((await status(org.id, user.auth).expect(200)).body.license.is_active).toBe(true);
    });
  });

  describe('TIERS_FILE', () => {
    it('limits come from the file; a tier it no longer lists (pro) keeps its name with the free limits', async () => {
      const { org, user } = await memberOfNewOrg();
      const get = () => custom.http().get('/api/licensing/status').query({ organisation_id: org.id }).set(user.auth).expect(200);
      await setLicense(t, org.id, { tier: 'gold', status: 'active' });
      expect((await get()).body).toEqual(body('gold', true, false, { projects: 9, ai_tokens: 99, users: 5 }));
      await setLicense(t, org.id, { tier: 'pro', status: 'active' });
      expect((await get()).body).toEqual(body('pro', true, false, { projects: 1, ai_tokens: 10, users: 2 }));
    });
  });
});
