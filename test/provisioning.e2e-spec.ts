import { randomUUID } from 'node:crypto';
import { IdentityService } from '../src/identity/identity.service';
import { errorBody, setLicense } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'provisioning-key';
const TTL_S = 7200;

/**
 * The provisioning API (spec §3) and the caller's own view, through HTTP: every route, each credential,
 * bad input (nothing written), idempotent creates, the member limit under concurrency, the last owner.
 */
describe('provisioning API and the caller\'s own view', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, SESSION_TTL_S: String(TTL_S) } });
  });
  afterAll(() => t.close());

  const admin = (method: 'get' | 'post' | 'put' | 'delete', path: string) => t.http()[method](`/api/admin${path}`).set('X-Service-Key', KEY);
  const unique = (prefix: string) => `${prefix}-${randomUUID()}`;
  const count = async (table: string) => Number((await t.db.query(`SELECT count(*) AS n FROM ${table}`))[0].n);
  const newUser = async () => (await admin('post', '/users').send({ email: `${unique('u')}@example.com` }).expect(201)).body;
  const newOrg = async () => (await admin('post', '/organisations').send({ name: 'Org' }).expect(201)).body;
  const members = (org: string) =>
    t.db.query(`SELECT user_id, role FROM memberships WHERE organisation_id = $1 ORDER BY user_id`, [org]);

  describe('credentials', () => {
    it.each([
      ['no key → 401', {}, 401, 'service_key_required'],
      ['a wrong key → 401', { 'X-Service-Key': 'nope' }, 401, 'invalid_service_key'],
    ])('%s, nothing written', async (_label, headers, status, code) => {
      const before = await count('organisations');
      const res = await t.http().post('/api/admin/organisations').set(headers).send({ name: 'X' }).expect(status);
      expect(res.body).toEqual(errorBody(status, code));
      expect(await count('organisations')).toBe(before);
    });

    it("a user's session (bearer or cookie) is refused with 403, even an owner's", async () => {
      const org = await createOrganisation(t);
      const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
      const bearer = await t.http().get(`/api/admin/organisations/${org.id}`).set(owner.auth).expect(403);
      expect(bearer.body).toEqual(errorBody(403, 'session_not_accepted'));
      const cookie = await t.http().get(`/api/admin/organisations/${org.id}`).set('Cookie', `session=${owner.token}`).expect(403);
      expect(cookie.body).toEqual(errorBody(403, 'session_not_accepted'));
      // With the key as well, the key decides.
      await admin('get', `/organisations/${org.id}`).set(owner.auth).expect(200);
    });
  });

  describe('organisations', () => {
    it('creates (201), answers the same external_id again with the existing record (200), finds it by id and external_id', async () => {
      const externalId = unique('org');
      const created = await admin('post', '/organisations').send({ name: 'Acme', external_id: externalId }).expect(201);
      expect(created.body).toEqual({ id: expect.any(String), name: 'Acme', external_id: externalId });
      const again = await admin('post', '/organisations').send({ name: 'Acme renamed', external_id: externalId }).expect(200);
      expect(again.body).toEqual(created.body);
      expect((await admin('get', `/organisations/${created.body.id}`).expect(200)).body).toEqual(created.body);
      const byExternal = await admin('get', '/organisations').query({ external_id: externalId }).expect(200);
      expect(byExternal.body).toEqual(created.body);
    });

    it('without external_id every create is a new organisation', async () => {
      const a = await admin('post', '/organisations').send({ name: 'Same' }).expect(201);
      const b = await admin('post', '/organisations').send({ name: 'Same' }).expect(201);
      expect(a.body.id).not.toBe(b.body.id);
      expect(a.body.external_id).toBeNull();
    });

    it('twenty concurrent creates of one external_id, on a pool of two connections: one record, one 201, the rest 200 with it', async () => {
      // Two connections for twenty requests: a create that found the winner's record must read it on its own
      // transaction's connection; asking the pool for another while holding one would wait for ever (a 503).
      const small = await startTestApp({ databaseUrl: t.databaseUrl, env: { SERVICE_API_KEYS: KEY, DATABASE_POOL_SIZE: '2' } });
      try {
        for (const [path, body] of [
          ['/organisations', { name: 'Race', external_id: unique('race') }],
          ['/users', { email: `${unique('race')}@example.com`, external_id: unique('race') }],
        ] as const) {
          const answers = await Promise.all(
            Array.from({ length: 20 }, () => small.http().post(`/api/admin${path}`).set('X-Service-Key', KEY).send(body)),
          );
          expect(answers.map((r) => r.status).sort()).toEqual([...Array(19).fill(200), 201]);
          expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
          const table = path === '/users' ? 'users' : 'organisations';
          expect(await t.db.query(`SELECT id FROM ${table} WHERE external_id = $1`, [body.external_id])).toHaveLength(1);
        }
      } finally {
        await small.close();
      }
    });

    it.each([
      ['an unknown field', { name: 'X', plan: 'pro' }],
      ['a name of the wrong JSON type', { name: 42 }],
      ['a blank name', { name: '   ' }],
      ['a name over 200 characters', { name: 'n'.repeat(201) }],
      ['an external_id over 255 characters', { name: 'X', external_id: 'e'.repeat(256) }],
      ['an empty external_id', { name: 'X', external_id: '' }],
      ['an external_id with a control character', { name: 'X', external_id: 'a\u0007b' }],
      ['an external_id of the wrong JSON type', { name: 'X', external_id: 7 }],
    ])('%s → 400, nothing written', async (_label, body) => {
      const before = await count('organisations');
      const res = await admin('post', '/organisations').send(body).expect(400);
      expect(res.body).toMatchObject({ statusCode: 400, code: 'validation_failed' });
      expect(await count('organisations')).toBe(before);
    });

    it('255 printable characters, Unicode included, are a valid external_id', async () => {
      const externalId = `é ${'x'.repeat(252)}✓`; // 255 characters: the longest allowed
      const res = await admin('post', '/organisations').send({ name: 'Long', external_id: externalId }).expect(201);
      expect(res.body.external_id).toBe(externalId);
    });

    it('lookups: unknown id or external_id → 404; malformed id or missing external_id → 400', async () => {
      expect((await admin('get', `/organisations/${randomUUID()}`).expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
      const byExternal = await admin('get', '/organisations').query({ external_id: unique('none') }).expect(404);
      expect(byExternal.body).toEqual(errorBody(404, 'organisation_not_found'));
      await admin('get', '/organisations/not-a-uuid').expect(400);
      await admin('get', '/organisations').expect(400);
    });
  });

  describe('users', () => {
    it('creates (201, email stored lower-case), the same external_id again → 200, lookups by id and external_id', async () => {
      const externalId = unique('user');
      const email = `${unique('Ada')}@Example.com`;
      const created = await admin('post', '/users').send({ email, external_id: externalId }).expect(201);
      expect(created.body).toEqual({ id: expect.any(String), email: email.toLowerCase(), external_id: externalId });
      expect((await admin('post', '/users').send({ email, external_id: externalId }).expect(200)).body).toEqual(created.body);
      expect((await admin('get', `/users/${created.body.id}`).expect(200)).body).toEqual(created.body);
      expect((await admin('get', '/users').query({ external_id: externalId }).expect(200)).body).toEqual(created.body);
      expect((await admin('get', `/users/${randomUUID()}`).expect(404)).body).toEqual(errorBody(404, 'user_not_found'));
      await admin('get', '/users').query({ external_id: unique('none') }).expect(404);
    });

    it('an email already taken (under another external_id, or none) → 409 email_taken, nothing written', async () => {
      const email = `${unique('taken')}@example.com`;
      await admin('post', '/users').send({ email, external_id: unique('first') }).expect(201);
      const before = await count('users');
      const other = await admin('post', '/users').send({ email, external_id: unique('second') }).expect(409);
      expect(other.body).toEqual(errorBody(409, 'email_taken'));
      await admin('post', '/users').send({ email: email.toUpperCase() }).expect(409);
      expect(await count('users')).toBe(before);
    });

    it.each([
      ['a bad email', { email: 'not-an-email' }],
      ['an email of the wrong type', { email: ['a@example.com'] }],
      ['an unknown field', { email: 'x@example.com', name: 'X' }],
      ['an over-long external_id', { email: 'y@example.com', external_id: 'u'.repeat(256) }],
    ])('%s → 400, nothing written', async (_label, body) => {
      const before = await count('users');
      expect((await admin('post', '/users').send(body).expect(400)).body).toMatchObject({ code: 'validation_failed' });
      expect(await count('users')).toBe(before);
    });
  });

  describe('memberships', () => {
    it('PUT adds a member and changes a role (200); DELETE removes (204)', async () => {
      const org = await newOrg();
      const [owner, user] = [await newUser(), await newUser()];
      await admin('put', `/organisations/${org.id}/members/${owner.id}`).send({ role: 'owner' }).expect(200);
      const added = await admin('put', `/organisations/${org.id}/members/${user.id}`).send({ role: 'member' }).expect(200);
      expect(added.body).toEqual({ organisation_id: org.id, user_id: user.id, role: 'member' });
      await admin('put', `/organisations/${org.id}/members/${user.id}`).send({ role: 'admin' }).expect(200);
      expect(await members(org.id)).toContainEqual({ user_id: user.id, role: 'admin' });
      const removed = await admin('delete', `/organisations/${org.id}/members/${user.id}`).expect(204);
      expect(removed.text).toBe('');
      expect(await members(org.id)).toEqual([{ user_id: owner.id, role: 'owner' }]);
      const again = await admin('delete', `/organisations/${org.id}/members/${user.id}`).expect(404);
      expect(again.body).toEqual(errorBody(404, 'membership_not_found'));
    });

    it('unknown organisation or user → 404; bad role, unknown field or malformed ids → 400; nothing written', async () => {
      const org = await newOrg();
      const user = await newUser();
      const before = await count('memberships');
      expect((await admin('put', `/organisations/${randomUUID()}/members/${user.id}`).send({ role: 'member' }).expect(404)).body)
        .toEqual(errorBody(404, 'organisation_not_found'));
      expect((await admin('put', `/organisations/${org.id}/members/${randomUUID()}`).send({ role: 'member' }).expect(404)).body)
        .toEqual(errorBody(404, 'user_not_found'));
      await admin('put', `/organisations/${org.id}/members/${user.id}`).send({ role: 'superuser' }).expect(400);
      await admin('put', `/organisations/${org.id}/members/${user.id}`).send({ role: 'member', admin: true }).expect(400);
      await admin('put', `/organisations/${org.id}/members/${user.id}`).send({}).expect(400);
      await admin('put', `/organisations/not-a-uuid/members/${user.id}`).send({ role: 'member' }).expect(400);
      await admin('delete', `/organisations/${org.id}/members/not-a-uuid`).expect(400);
      expect(await count('memberships')).toBe(before);
    });

    it('the last owner can be neither removed nor demoted (409); with a second owner both work', async () => {
      const org = await newOrg();
      const [a, b] = [await newUser(), await newUser()];
      await admin('put', `/organisations/${org.id}/members/${a.id}`).send({ role: 'owner' }).expect(200);
      expect((await admin('delete', `/organisations/${org.id}/members/${a.id}`).expect(409)).body).toEqual(errorBody(409, 'last_owner'));
      expect((await admin('put', `/organisations/${org.id}/members/${a.id}`).send({ role: 'admin' }).expect(409)).body)
        .toEqual(errorBody(409, 'last_owner'));
      expect(await members(org.id)).toEqual([{ user_id: a.id, role: 'owner' }]);
      await admin('put', `/organisations/${org.id}/members/${b.id}`).send({ role: 'owner' }).expect(200);
      await admin('put', `/organisations/${org.id}/members/${a.id}`).send({ role: 'member' }).expect(200);
      await admin('delete', `/organisations/${org.id}/members/${a.id}`).expect(204);
      expect(await members(org.id)).toEqual([{ user_id: b.id, role: 'owner' }]);
    });

    it('two owners removed at once: one goes, the other stays the last owner (409)', async () => {
      const org = await newOrg();
      const owners = [await newUser(), await newUser()];
      for (const o of owners) await admin('put', `/organisations/${org.id}/members/${o.id}`).send({ role: 'owner' }).expect(200);
      const answers = await Promise.all(owners.map((o) => admin('delete', `/organisations/${org.id}/members/${o.id}`)));
      expect(answers.map((r) => r.status).sort()).toEqual([204, 409]);
      expect(await members(org.id)).toHaveLength(1);
    });

    it('a new member beyond the users limit in force → 402 limit_exceeded, nothing written; role changes still work', async () => {
      const org = await newOrg();
      const users = [await newUser(), await newUser(), await newUser(), await newUser()];
      for (const u of users.slice(0, 3)) await admin('put', `/organisations/${org.id}/members/${u.id}`).send({ role: 'member' }).expect(200);
      const refused = await admin('put', `/organisations/${org.id}/members/${users[3].id}`).send({ role: 'member' }).expect(402);
      expect(refused.body).toEqual(errorBody(402, 'limit_exceeded'));
      expect(await members(org.id)).toHaveLength(3);
      await admin('put', `/organisations/${org.id}/members/${users[0].id}`).send({ role: 'owner' }).expect(200);
      // A paid tier in force raises the limit (pro: 10 users).
      await setLicense(t, org.id, { tier: 'pro', status: 'active' });
      await admin('put', `/organisations/${org.id}/members/${users[3].id}`).send({ role: 'member' }).expect(200);
    });

    it('twelve additions at once over HTTP and through the service the CLI uses: never more members than the limit', async () => {
      const org = await newOrg();
      const users = await Promise.all(Array.from({ length: 12 }, newUser));
      const identity = t.app.get(IdentityService);
      const outcomes = await Promise.all(
        users.map((u, i) =>
          i % 2 === 0
            ? admin('put', `/organisations/${org.id}/members/${u.id}`).send({ role: 'member' }).then((r) => r.status)
            : identity.addMember(org.id, u.id, 'member').then(() => 200, (e: { getStatus?: () => number }) => e.getStatus?.() ?? 500),
        ),
      );
      expect(outcomes.filter((s) => s === 200)).toHaveLength(3);
      expect(outcomes.filter((s) => s === 402)).toHaveLength(9);
      expect(await members(org.id)).toHaveLength(3);
    });
  });

  describe('sessions', () => {
    it('mints a session (201) that signs the user in, honours ttl_s, and revokes it by token', async () => {
      const user = await newUser();
      const before = Date.now();
      const minted = await admin('post', '/sessions').send({ user_id: user.id, ttl_s: 600 }).expect(201);
      expect(minted.body).toEqual({ token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String) });
      const expiresIn = (Date.parse(minted.body.expires_at) - before) / 1000;
      expect(expiresIn).toBeGreaterThan(590);
      expect(expiresIn).toBeLessThan(610 + (Date.now() - before) / 1000);
      const auth = { Authorization: `Bearer ${minted.body.token}` };
      expect((await t.http().get('/api/me').set(auth).expect(200)).body.user.id).toBe(user.id);
      expect((await admin('post', '/sessions/revoke').send({ token: minted.body.token }).expect(200)).body).toEqual({ revoked: 1 });
      await t.http().get('/api/me').set(auth).expect(401);
      expect((await admin('post', '/sessions/revoke').send({ token: minted.body.token }).expect(200)).body).toEqual({ revoked: 0 });
    });

    it('default ttl is SESSION_TTL_S; more is 400; revoking by user_id ends all of their sessions', async () => {
      const user = await newUser();
      const minted = await admin('post', '/sessions').send({ user_id: user.id }).expect(201);
      expect(Math.abs(Date.parse(minted.body.expires_at) - Date.now() - TTL_S * 1000)).toBeLessThan(60_000);
      const second = await admin('post', '/sessions').send({ user_id: user.id, ttl_s: TTL_S }).expect(201);
      const tooLong = await admin('post', '/sessions').send({ user_id: user.id, ttl_s: TTL_S + 1 }).expect(400);
      expect(tooLong.body.code).toBe('validation_failed');
      expect((await admin('post', '/sessions/revoke').send({ user_id: user.id }).expect(200)).body).toEqual({ revoked: 2 });
      for (const s of [minted.body, second.body]) await t.http().get('/api/me').set('Authorization', `Bearer ${s.token}`).expect(401);
    });

    it.each([
      ['ttl_s 0', { ttl_s: 0 }],
      ['ttl_s as a string', { ttl_s: '60' }],
      ['ttl_s fractional', { ttl_s: 1.5 }],
      ['an unknown field', { scope: 'all' }],
    ])('%s → 400, no session', async (_label, extra) => {
      const user = await newUser();
      const before = await count('sessions');
      await admin('post', '/sessions').send({ user_id: user.id, ...extra }).expect(400);
      expect(await count('sessions')).toBe(before);
    });

    it('unknown user → 404; revoke needs exactly one of token and user_id', async () => {
      expect((await admin('post', '/sessions').send({ user_id: randomUUID() }).expect(404)).body).toEqual(errorBody(404, 'user_not_found'));
      await admin('post', '/sessions').send({ user_id: 'nope' }).expect(400);
      await admin('post', '/sessions/revoke').send({}).expect(400);
      await admin('post', '/sessions/revoke').send({ token: 'x', user_id: randomUUID() }).expect(400);
      expect((await admin('post', '/sessions/revoke').send({ user_id: randomUUID() }).expect(404)).body.code).toBe('user_not_found');
    });
  });

  describe("the caller's own view", () => {
    it('GET /api/me: the user and their organisations with role and tier', async () => {
      const externalId = unique('me');
      const user = (await admin('post', '/users').send({ email: `${unique('me')}@example.com`, external_id: externalId }).expect(201)).body;
      const free = (await admin('post', '/organisations').send({ name: 'Free Co', external_id: unique('o') }).expect(201)).body;
      const paid = await newOrg();
      await admin('put', `/organisations/${free.id}/members/${user.id}`).send({ role: 'owner' }).expect(200);
      await admin('put', `/organisations/${paid.id}/members/${user.id}`).send({ role: 'member' }).expect(200);
      await setLicense(t, paid.id, { tier: 'team', status: 'active' });
      const { token } = (await admin('post', '/sessions').send({ user_id: user.id }).expect(201)).body;
      const me = await t.http().get('/api/me').set('Authorization', `Bearer ${token}`).expect(200);
      expect(me.body).toEqual({
        user: { id: user.id, email: user.email, external_id: externalId },
        organisations: [
          { id: free.id, name: 'Free Co', external_id: free.external_id, role: 'owner', tier: 'free' },
          { id: paid.id, name: 'Org', external_id: null, role: 'member', tier: 'team' },
        ],
        has_more: false,
      });
      await t.http().get('/api/me').expect(401);
    });

    it('GET /api/organisations/{id}/members: members only; a non-member gets the same 403 whether it exists or not', async () => {
      const org = await createOrganisation(t);
      const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
      const member = await createUserWithSession(t, { org: org.id, role: 'member' });
      const outsider = await createUserWithSession(t, { org: (await createOrganisation(t)).id, role: 'owner' });
      const list = await t.http().get(`/api/organisations/${org.id}/members`).set(member.auth).expect(200);
      expect(list.body).toEqual({
        data: [
          { user_id: owner.id, email: owner.email, role: 'owner' },
          { user_id: member.id, email: member.email, role: 'member' },
        ],
      });
      const existing = await t.http().get(`/api/organisations/${org.id}/members`).set(outsider.auth).expect(403);
      const missing = await t.http().get(`/api/organisations/${randomUUID()}/members`).set(outsider.auth).expect(403);
      expect(existing.body).toEqual(missing.body);
      expect(existing.body).toEqual(errorBody(403, 'organisation_forbidden'));
      await t.http().get(`/api/organisations/${org.id}/members`).expect(401);
      await t.http().get('/api/organisations/not-a-uuid/members').set(member.auth).expect(400);
      // A back-end's key is not a member.
      await t.http().get(`/api/organisations/${org.id}/members`).set('X-Service-Key', KEY).expect(401);
    });
  });
});
