import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { cli } from './support/run-cli';
import { errorBody } from './licensing-fixtures';
import { startTestApp, TestApp } from './support/test-app';

const KEY = 'audit-webapp-key-0123456789';
const BARE = 'audit-bare-key-9876543210';
const WITH_COLON = 'audit-named:with:colons';

/**
 * The audit trail (spec §12) through HTTP: each change of the provisioning API writes one entry in its
 * transaction, with the key's name as actor and the request id; failed or idempotent changes write none;
 * the read is newest first with keyset pagination; no key is ever written to the table or the logs.
 */
describe('audit trail', () => {
  let t: TestApp;
  const logLines: string[] = [];
  beforeAll(async () => {
    t = await startTestApp({ logLines, env: { SERVICE_API_KEYS: `webapp:${KEY},${BARE},ops:${WITH_COLON}` } });
  });
  afterAll(() => t.close());

  const admin = (method: 'get' | 'post' | 'put' | 'delete', path: string, key = KEY) =>
    t.http()[method](`/api/admin${path}`).set('X-Service-Key', key);
  const unique = (prefix: string) => `${prefix}-${randomUUID()}`;
  const newUser = async () => (await admin('post', '/users').send({ email: `${unique('u')}@example.com` }).expect(201)).body;
  const newOrg = async () => (await admin('post', '/organisations').send({ name: 'Org' }).expect(201)).body;
  const entries = async (organisationId: string) =>
    (await admin('get', `/audit?organisation_id=${organisationId}&limit=100`).expect(200)).body.data;
  const count = async () => Number((await t.db.query(`SELECT count(*) AS n FROM audit_log`))[0].n);
  const lastEntry = async () => (await admin('get', '/audit?limit=1').expect(200)).body.data[0];

  it('organisation.created and user.created: one entry each, with actor, after and the request id; an idempotent create writes none', async () => {
    const externalId = unique('org');
    const created = await admin('post', '/organisations').set('X-Request-Id', 'req-org-1').send({ name: 'Acme', external_id: externalId }).expect(201);
    const [entry] = await entries(created.body.id);
    expect(entry).toMatchObject({
      actor: 'service_key:webapp',
      action: 'organisation.created',
      organisation_id: created.body.id,
      before: null,
      after: { id: created.body.id, name: 'Acme', external_id: externalId },
      request_id: 'req-org-1',
    });
    expect(new Date(entry.at).getTime()).not.toBeNaN();
    const before = await count();
    await admin('post', '/organisations').send({ name: 'Acme', external_id: externalId }).expect(200);
    expect(await count()).toBe(before);

    const user = await admin('post', '/users').send({ email: `${unique('ada')}@example.com` }).expect(201);
    expect(await lastEntry()).toMatchObject({ action: 'user.created', organisation_id: null, after: user.body, actor: 'service_key:webapp' });
    await admin('post', '/users').send({ email: user.body.email }).expect(409);
    expect(await lastEntry()).toMatchObject({ action: 'user.created', after: user.body });
  });

  it('member.added, member.role_changed, member.removed with before/after; an unchanged put, 402 and 409 write nothing', async () => {
    const org = await newOrg();
    const [a, b, c, d] = [await newUser(), await newUser(), await newUser(), await newUser()];
    await admin('put', `/organisations/${org.id}/members/${a.id}`).send({ role: 'owner' }).expect(200);
    await admin('put', `/organisations/${org.id}/members/${b.id}`).send({ role: 'member' }).expect(200);
    await admin('put', `/organisations/${org.id}/members/${b.id}`).send({ role: 'admin' }).expect(200);
    await admin('put', `/organisations/${org.id}/members/${b.id}`).send({ role: 'admin' }).expect(200);
    await admin('put', `/organisations/${org.id}/members/${c.id}`).send({ role: 'member' }).expect(200);
    const before = await count();
    await admin('put', `/organisations/${org.id}/members/${d.id}`).send({ role: 'member' }).expect(402);
    await admin('delete', `/organisations/${org.id}/members/${a.id}`).expect(409);
    await admin('put', `/organisations/${org.id}/members/${a.id}`).send({ role: 'member' }).expect(409);
    expect(await count()).toBe(before);
    await admin('delete', `/organisations/${org.id}/members/${c.id}`).expect(204);

    const actions = (await entries(org.id)).map((e: { action: string; before: unknown; after: unknown }) => [e.action, e.before, e.after]);
    expect(actions).toEqual([
      ['member.removed', { user_id: c.id, role: 'member' }, null],
      ['member.added', null, { user_id: c.id, role: 'member' }],
      ['member.role_changed', { user_id: b.id, role: 'member' }, { user_id: b.id, role: 'admin' }],
      ['member.added', null, { user_id: b.id, role: 'member' }],
      ['member.added', null, { user_id: a.id, role: 'owner' }],
      ['organisation.created', null, { id: org.id, name: 'Org', external_id: null }],
    ]);
  });

  it('session.created and sessions.revoked name the session by id, never by token', async () => {
    const user = await newUser();
    const session = await admin('post', '/sessions').set('X-Request-Id', 'req-session').send({ user_id: user.id }).expect(201);
    const [row] = await t.db.query(`SELECT id FROM sessions WHERE user_id = $1`, [user.id]);
    expect(await lastEntry()).toMatchObject({
      action: 'session.created',
      after: { session_id: row.id, user_id: user.id, expires_at: session.body.expires_at },
      request_id: 'req-session',
    });
    await admin('post', '/sessions/revoke').send({ token: session.body.token }).expect(200, { revoked: 1 });
    expect(await lastEntry()).toMatchObject({ action: 'sessions.revoked', after: { session_id: row.id, user_id: user.id, revoked: 1 } });
    const before = await count();
    await admin('post', '/sessions/revoke').send({ token: session.body.token }).expect(200, { revoked: 0 });
    await admin('post', '/sessions/revoke').send({ user_id: user.id }).expect(200, { revoked: 0 });
    expect(await count()).toBe(before);
    await admin('post', '/sessions').send({ user_id: user.id }).expect(201);
    await admin('post', '/sessions').send({ user_id: user.id }).expect(201);
    await admin('post', '/sessions/revoke').send({ user_id: user.id }).expect(200, { revoked: 2 });
    expect(await lastEntry()).toMatchObject({ action: 'sessions.revoked', after: { user_id: user.id, revoked: 2 } });
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_log WHERE before::text || after::text LIKE $1`, [
      `%${session.body.token}%`,
    ]);
    expect(n).toBe(0);
  });

  it('actors: a name:key is its name, a bare key is key<N> by its place in the list, a key with colons keeps them', async () => {
    await admin('post', '/organisations', BARE).send({ name: 'Bare' }).expect(201);
    expect((await lastEntry()).actor).toBe('service_key:key2');
    await admin('post', '/organisations', 'with:colons').expect(401);
    await admin('post', '/organisations', WITH_COLON).send({ name: 'Ops' }).expect(201);
    expect((await lastEntry()).actor).toBe('service_key:ops');
  });

  it('the operator CLI writes the same entries, with actor cli:<os user> and no request id; a refused command writes nothing', async () => {
    const run = (args: string[]) => cli(args, { DATABASE_URL: t.databaseUrl }, { app: t.app });
    const actor = `cli:${userInfo().username}`;
    const org = (await run(['org:create', '--name', 'Cli Ltd'])).json;
    const user = (await run(['user:create', '--email', `${unique('cli')}@example.com`])).json;
    expect((await run(['member:add', '--org', org.id, '--user', user.id, '--role', 'owner'])).code).toBe(0);
    const session = (await run(['session:create', '--user', user.id])).json;
    expect((await run(['session:revoke', '--token', session.token])).code).toBe(0);
    const before = await count();
    expect((await run(['session:revoke', '--token', session.token])).code).toBe(2);
    expect((await run(['user:create', '--email', user.email])).code).not.toBe(0);
    expect(await count()).toBe(before);
    const rows = await t.db.query(
      `SELECT actor, action, request_id FROM audit_log WHERE organisation_id = $1 OR after->>'user_id' = $2 OR after->>'id' = $2 ORDER BY id`,
      [org.id, user.id],
    );
    expect(rows).toEqual(
      ['organisation.created', 'user.created', 'member.added', 'session.created', 'sessions.revoked'].map((action) => ({ actor, action, request_id: null })),
    );
  });

  it('pages newest first by id, with has_more and starting_after; per organisation', async () => {
    const org = await newOrg();
    const users = [await newUser(), await newUser()];
    for (const u of users) await admin('put', `/organisations/${org.id}/members/${u.id}`).send({ role: 'member' }).expect(200);
    const first = await admin('get', `/audit?organisation_id=${org.id}&limit=2`).expect(200);
    expect(first.body.has_more).toBe(true);
    expect(first.body.data.map((e: { after: { user_id: string } }) => e.after.user_id)).toEqual([users[1].id, users[0].id]);
    const second = await admin('get', `/audit?organisation_id=${org.id}&limit=2&starting_after=${first.body.data[1].id}`).expect(200);
    expect(second.body).toMatchObject({ has_more: false, data: [{ action: 'organisation.created' }] });
    const all = (await admin('get', '/audit').expect(200)).body;
    expect(all.data).toHaveLength(20);
    const ids: number[] = all.data.map((e: { id: string }) => Number(e.id));
    expect(ids.every((id, i) => i === 0 || id < ids[i - 1])).toBe(true);
  });

  it.each([
    ['limit=0', 'limit=0'],
    ['limit=101', 'limit=101'],
    ['limit=1e1', 'limit=1e1'],
    ['a cursor that is no id', 'starting_after=abc'],
    ['an organisation_id that is no UUID', 'organisation_id=acme'],
  ])('%s → 400 validation_failed', async (_label, query) => {
    const res = await admin('get', `/audit?${query}`).expect(400);
    expect(res.body).toEqual(errorBody(400, 'validation_failed'));
  });

  it('needs a service key', async () => {
    await t.http().get('/api/admin/audit').expect(401);
  });

  it('no key is ever written: not in the audit table, not in a log line', async () => {
    const table = JSON.stringify(await t.db.query(`SELECT * FROM audit_log`));
    const logs = logLines.join('\n');
    for (const secret of [KEY, BARE, WITH_COLON, 'with:colons']) {
      expect(table).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    expect(logLines.length).toBeGreaterThan(0);
  });
});
