import { randomUUID } from 'node:crypto';
import * as pg from 'pg';
import { NotificationsService } from '../src/notifications/notifications.service';
import { errorBody, setLicense, setUsage } from './licensing-fixtures';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const KEY = 'overrides-key';
const HOUR_MS = 3_600_000;
const inAnHour = () => new Date(Date.now() + HOUR_MS).toISOString();

describe('overrides: PUT/GET/DELETE /api/admin/organisations/{id}/overrides[/{name}]', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let t: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    receiver = await startReceiver(secret);
    const env = { SERVICE_API_KEYS: `support:${KEY}`, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret };
    t = await startTestApp({ env });
    second = await startTestApp({ databaseUrl: t.databaseUrl, env });
  });
  afterAll(async () => {
    await second.close();
    await t.close();
    await receiver.close();
  });

  const asService = { 'X-Service-Key': KEY };
  const put = (org: string, name: string, body: object, app = t) =>
    app.http().put(`/api/admin/organisations/${org}/overrides/${name}`).set(asService).send(body);
  const list = (org: string) => t.http().get(`/api/admin/organisations/${org}/overrides`).set(asService);
  const del = (org: string, name: string) => t.http().delete(`/api/admin/organisations/${org}/overrides/${name}`).set(asService);
  const entitlements = async (org: string) =>
    (await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(asService).expect(200)).body;
  const stored = (org: string) => t.db.query(`SELECT name, value, expires_at, note FROM entitlement_overrides WHERE organisation_id = $1`, [org]);
  const auditOf = (org: string) =>
    t.db.query(`SELECT actor, action, before, after, request_id FROM audit_log WHERE organisation_id = $1 ORDER BY id`, [org]);
  const messages = async (org: string) =>
    ((await t.db.query(`SELECT body FROM notification_messages WHERE organisation_id = $1 ORDER BY version`, [org])) as { body: string }[]).map(
      (m) => JSON.parse(m.body),
    );
  const report = (org: string, amount: number, app = t) =>
    app.http().post('/api/licensing/usage').set(asService).send({ organisation_id: org, metric: 'projects', amount });

  it('set, read back, the same again unchanged, change, delete: each change audited and notified in its transaction', async () => {
    const org = (await createOrganisation(t)).id;
    const set = await put(org, 'sso', { value: true, note: 'Pilot' }).expect(200);
    expect(set.body).toEqual({ name: 'sso', value: true, expires_at: null, note: 'Pilot', created_at: expect.stringMatching(/Z$/) });
    expect((await entitlements(org)).features.sso).toBe(true);
    expect((await entitlements(org)).overrides).toEqual([set.body]);
    expect((await list(org).expect(200)).body).toEqual({ data: [set.body] });

    // The same again: 200 with the record as it was; nothing written, audited or notified.
    expect((await put(org, 'sso', { value: true, note: 'Pilot' }).expect(200)).body).toEqual(set.body);

    const expiresAt = inAnHour();
    const changed = await put(org, 'projects', { value: 50, expires_at: expiresAt }).expect(200);
    expect(changed.body).toMatchObject({ name: 'projects', value: 50, expires_at: expiresAt, note: null });
    expect((await entitlements(org)).limits.projects).toEqual({ used: 0, limit: 50, at_capacity: false, overage: 'block', source: 'override' });

    await del(org, 'sso').expect(204);
    expect((await del(org, 'sso').expect(404)).body).toEqual(errorBody(404, 'override_not_found'));
    expect((await entitlements(org)).features.sso).toBe(false);

    const audit = await auditOf(org);
    expect(audit).toEqual([
      { actor: 'service_key:support', action: 'override.set', before: null, after: { name: 'sso', value: true, expires_at: null, note: 'Pilot' }, request_id: expect.any(String) },
      { actor: 'service_key:support', action: 'override.set', before: null, after: { name: 'projects', value: 50, expires_at: expiresAt, note: null }, request_id: expect.any(String) },
      { actor: 'service_key:support', action: 'override.deleted', before: { name: 'sso', value: true, expires_at: null, note: 'Pilot' }, after: null, request_id: expect.any(String) },
    ]);
    // license.updated for each change of what is in force, with features and seats.
    const sent = await messages(org);
    expect(sent.map((m) => [m.type, m.data.version, m.data.features.sso, m.data.seats])).toEqual([
      ['license.updated', 1, true, null],
      ['license.updated', 2, true, null],
      ['license.updated', 3, false, null],
    ]);
    expect((await entitlements(org)).version).toBe(3);
    await waitFor('the three messages delivered', () => receiver.accepted(org).length === 3);
  });

  it('a changed note or expiry is a change (audited with before and after); a lower limit than usage leaves usage at capacity', async () => {
    const org = (await createOrganisation(t)).id;
    await setUsage(t, org, 'projects', 3);
    await put(org, 'projects', { value: 10 }).expect(200);
    await put(org, 'projects', { value: 10, note: 'Deal #42' }).expect(200);
    await put(org, 'projects', { value: 2, note: 'Deal #42' }).expect(200);
    const audit = await auditOf(org);
    expect(audit.map((a: { before: unknown; after: unknown }) => [a.before, a.after])).toEqual([
      [null, { name: 'projects', value: 10, expires_at: null, note: null }],
      [{ name: 'projects', value: 10, expires_at: null, note: null }, { name: 'projects', value: 10, expires_at: null, note: 'Deal #42' }],
      [{ name: 'projects', value: 10, expires_at: null, note: 'Deal #42' }, { name: 'projects', value: 2, expires_at: null, note: 'Deal #42' }],
    ]);
    expect((await entitlements(org)).limits.projects).toMatchObject({ used: 3, limit: 2, at_capacity: true });
    // A note alone changes nothing in force: two messages (10, then 2), not three.
    expect((await messages(org)).map((m) => m.data.version)).toEqual([1, 2]);
  });

  it("an override's note reaches owners, admins and service keys, not plain members, in the entitlements and explain answers", async () => {
    const org = (await createOrganisation(t)).id;
    const note = 'Pilot agreed with Jane Doe (jane@customer.example), +44 20 7946 0000';
    await put(org, 'sso', { value: true, note }).expect(200);
    await put(org, 'projects', { value: 40 }).expect(200);
    const callers: [string, Record<string, string>][] = [['service key', asService]];
    for (const role of ['owner', 'admin', 'member'] as const) callers.push([role, (await createUserWithSession(t, { org, role })).auth]);
    const seen = [];
    for (const [who, auth] of callers) {
      const read = await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(auth).expect(200);
      const why = await t.http().get('/api/licensing/explain').query({ organisation_id: org }).set(auth).expect(200);
      const steps = why.body.because.filter((step: { kind: string }) => step.kind === 'override');
      seen.push([who, read.body.overrides.map((o: object) => 'note' in o), steps.map((o: object) => 'note' in o)]);
      if (who === 'member') {
        expect(JSON.stringify(read.body)).not.toContain('Jane');
        expect(JSON.stringify(why.body)).not.toContain('Jane');
        // Everything else of the override is there.
        expect(read.body.overrides[1]).toEqual({ name: 'sso', value: true, expires_at: null, created_at: expect.stringMatching(/Z$/) });
      } else {
        expect(read.body.overrides.find((o: { name: string }) => o.name === 'sso').note).toBe(note);
        expect(steps.find((o: { name: string }) => o.name === 'sso').note).toBe(note);
      }
    }
    expect(seen).toEqual([
      ['service key', [true, true], [true, true]],
      ['owner', [true, true], [true, true]],
      ['admin', [true, true], [true, true]],
      ['member', [false, false], [false, false]],
    ]);
  });

  it('applies wherever limits apply, whatever the tier and license state: usage writes, member additions, status, checks', async () => {
    const org = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    await setLicense(t, org, { tier: 'enterprise', status: 'unpaid' }); // not active: free limits, overrides aside
    await put(org, 'projects', { value: 1 }).expect(200);
    await put(org, 'users', { value: 1 }).expect(200);
    await put(org, 'audit_log', { value: true }).expect(200);

    await report(org, 1).expect(200);
    expect((await report(org, 1).expect(402)).body).toEqual(errorBody(402, 'limit_exceeded'));
    const newcomer = await createUserWithSession(t);
    const added = await t.http().put(`/api/admin/organisations/${org}/members/${newcomer.id}`).set(asService).send({ role: 'member' });
    expect(added.status).toBe(402);
    const status = (await t.http().get('/api/licensing/status').query({ organisation_id: org }).set(owner.auth).expect(200)).body;
    expect(status.usage).toEqual({
      projects: { used: 1, limit: 1, at_capacity: true },
      ai_tokens: { used: 0, limit: 100_000, at_capacity: false },
      users: { used: 1, limit: 1, at_capacity: true },
    });
    const check = (query: object) => t.http().get('/api/licensing/check').query({ organisation_id: org, ...query }).set(owner.auth).expect(200);
    expect((await check({ metric: 'projects', amount: 1 })).body).toEqual({ allowed: false, used: 1, limit: 1, remaining: 0 });
    expect((await check({ feature: 'audit_log' })).body).toEqual({ allowed: true });

    // Removing the limit's override: the tier decides again.
    await del(org, 'projects').expect(204);
    expect((await report(org, 1).expect(200)).body).toMatchObject({ used: 2, limit: 3 });
  });

  it('expiry: applies until expires_at with no job (the clock moved), is still listed, and is notified by the minutely sweep', async () => {
    const org = (await createOrganisation(t)).id;
    const expiresAt = inAnHour();
    const set = (await put(org, 'api_access', { value: true, expires_at: expiresAt }).expect(200)).body;
    expect((await entitlements(org)).features.api_access).toBe(true);
    const notifications = t.app.get(NotificationsService);
    expect(await notifications.overrideExpiries()).toBe(0); // not expired: nothing to compare

    // Move this organisation's clock two hours on: every time it stored is two hours earlier.
    await t.db.query(
      `UPDATE entitlement_overrides SET expires_at = expires_at - interval '2 hours', created_at = created_at - interval '2 hours' WHERE organisation_id = $1`,
      [org],
    );
    await t.db.query(`UPDATE notification_states SET checked_at = checked_at - interval '2 hours' WHERE organisation_id = $1`, [org]);
    const after = await entitlements(org);
    expect(after.features.api_access).toBe(false);
    expect(after.overrides).toEqual([]);
    const listed = (await list(org).expect(200)).body.data;
    expect(listed).toEqual([{ ...set, expires_at: new Date(Date.parse(expiresAt) - 2 * HOUR_MS).toISOString(), created_at: expect.any(String) }]);

    expect(await notifications.overrideExpiries()).toBe(1);
    expect(await notifications.overrideExpiries()).toBe(0); // compared once
    const sent = await messages(org);
    expect(sent.map((m) => [m.data.version, m.data.features.api_access])).toEqual([
      [1, true],
      [2, false],
    ]);
    await waitFor('the expiry delivered', () => receiver.accepted(org).some((r) => r.json.data.version === 2));
  });

  it('a notice state from before features and limits were recorded stands for its tier: comparing it again notifies nothing', async () => {
    const org = (await createOrganisation(t)).id;
    await setLicense(t, org, { tier: 'pro', status: 'active' });
    await t.db.query(`INSERT INTO notification_states (organisation_id, version, tier) VALUES ($1, 3, 'pro')`, [org]);
    const notifications = t.app.get(NotificationsService);
    expect(await t.db.transaction((m) => notifications.licenseMayHaveChanged(m, org))).toBeUndefined();
    await put(org, 'sso', { value: true }).expect(200);
    expect((await messages(org)).map((m) => [m.data.version, m.data.features])).toEqual([[4, { api_access: true, audit_log: false, sso: true }]]);
  });

  it('a limit lowered while a usage write is under way: the write commits before the new limit, or is checked against it', async () => {
    const org = (await createOrganisation(t)).id;
    await put(org, 'projects', { value: 1000 }).expect(200);
    await report(org, 5).expect(200);
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    const watcher = new pg.Client({ connectionString: t.databaseUrl });
    await watcher.connect();
    const waitingOnLocks = async () =>
      Number(
        (await watcher.query(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0]
          .count,
      );
    try {
      // Hold the counter row, so that the usage write (instance 1) takes its snapshot and then waits.
      await holder.query('BEGIN');
      await holder.query(`SELECT used FROM usage_counters WHERE organisation_id = $1 AND metric = 'projects' FOR UPDATE`, [org]);
      const write = report(org, 1).then((r) => r);
      await waitFor('the usage write to wait for the counter row', async () => (await waitingOnLocks()) === 1);
      // Lower the limit below the count through instance 2.
      let lowered = false;
      const lower = put(org, 'projects', { value: 5 }, second).then((r) => {
        lowered = true;
        return r;
      });
      await waitFor('the override to be written or to wait', async () => lowered || (await waitingOnLocks()) === 2);
      const loweredBeforeTheWrite = lowered;
      await holder.query('COMMIT');
      const [w, l] = await Promise.all([write, lower]);
      expect(l.status).toBe(200);
      // Either order is allowed; a write checked against 1000 committing after the limit of 5 is not.
      if (loweredBeforeTheWrite) expect([w.status, w.body.limit]).toEqual([402, undefined]);
      else expect([w.status, w.body]).toEqual([200, { metric: 'projects', used: 6, limit: 1000, at_capacity: false }]);
      expect((await report(org, 1).expect(402)).body).toEqual(errorBody(402, 'limit_exceeded'));
      expect((await entitlements(org)).limits.projects).toMatchObject({ limit: 5, source: 'override' });
    } finally {
      await holder.end();
      await watcher.end();
    }
  });

  it('concurrent reports on two instances while the limit is lowered: no report accepted past the limit in force at its commit', async () => {
    const org = (await createOrganisation(t)).id;
    await put(org, 'projects', { value: 1000 }).expect(200);
    const reports = Array.from({ length: 40 }, (_, i) => report(org, 1, i % 2 ? second : t));
    const lowering = put(org, 'projects', { value: 10 }, second);
    const answers = await Promise.all(reports);
    expect((await lowering).status).toBe(200);
    const accepted = answers.filter((a) => a.status === 200);
    expect(answers.every((a) => a.status === 200 || a.status === 402)).toBe(true);
    // Each accepted report was within the limit it was checked against, and that limit was in force then.
    for (const a of accepted) expect(a.body.used).toBeLessThanOrEqual(a.body.limit);
    const [{ used }] = await t.db.query(`SELECT used FROM usage_counters WHERE organisation_id = $1 AND metric = 'projects'`, [org]);
    expect(Number(used)).toBe(accepted.length);
    // Reports checked against 10 (after the lowering) never took the count past 10.
    const afterLowering = accepted.filter((a) => a.body.limit === 10);
    for (const a of afterLowering) expect(a.body.used).toBeLessThanOrEqual(10);
  });

  describe('bad input: 4xx, nothing written', () => {
    it.each([
      ['an unknown name', 'teleport', { value: true }, 400, 'unknown_entitlement'],
      ['a malformed name', 'Bad-Name', { value: true }, 400, 'unknown_entitlement'],
      ['a boolean for a metric', 'projects', { value: true }, 400, 'invalid_override_value'],
      ['an integer for a feature', 'sso', { value: 1 }, 400, 'invalid_override_value'],
      ['a negative limit', 'ai_tokens', { value: -1 }, 400, 'invalid_override_value'],
      ['a non-integer limit', 'ai_tokens', { value: 1.5 }, 400, 'invalid_override_value'],
      ['a limit as a string', 'ai_tokens', { value: '5' }, 400, 'invalid_override_value'],
      ['a null value', 'sso', { value: null }, 400, 'validation_failed'],
      ['no value', 'sso', { note: 'x' }, 400, 'validation_failed'],
      ['an expires_at in the past', 'sso', { value: true, expires_at: '2020-01-01T00:00:00Z' }, 400, 'validation_failed'],
      ['an unparsable expires_at', 'sso', { value: true, expires_at: 'next tuesday' }, 400, 'validation_failed'],
      ['an expires_at that is a number', 'sso', { value: true, expires_at: 1893456000 }, 400, 'validation_failed'],
      ['a note over 500 characters', 'sso', { value: true, note: 'x'.repeat(501) }, 400, 'validation_failed'],
      ['an unknown field', 'sso', { value: true, reason: 'x' }, 400, 'validation_failed'],
    ])('%s', async (_label, name, body, status, code) => {
      const org = (await createOrganisation(t)).id;
      expect((await put(org, name, body).expect(status)).body).toEqual(errorBody(status, code));
      expect(await stored(org)).toEqual([]);
      expect(await auditOf(org)).toEqual([]);
      expect(await messages(org)).toEqual([]);
    });

    it('a note of exactly 500 characters is taken', async () => {
      const org = (await createOrganisation(t)).id;
      await put(org, 'sso', { value: true, note: 'x'.repeat(500) }).expect(200);
    });

    it('404 for an organisation that does not exist, 400 for a malformed id; a session is refused (403), no key is 401', async () => {
      const missing = randomUUID();
      expect((await put(missing, 'sso', { value: true }).expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
      expect((await list(missing).expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
      expect((await del(missing, 'sso').expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
      await put('not-a-uuid', 'sso', { value: true }).expect(400);
      expect(await t.db.query(`SELECT 1 FROM entitlement_overrides WHERE organisation_id = $1`, [missing])).toEqual([]);

      const org = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      const url = `/api/admin/organisations/${org}/overrides/sso`;
      expect((await t.http().put(url).set(owner.auth).send({ value: true }).expect(403)).body).toEqual(errorBody(403, 'session_not_accepted'));
      expect((await t.http().put(url).send({ value: true }).expect(401)).body).toEqual(errorBody(401, 'service_key_required'));
      expect((await del(org, 'teleport').expect(400)).body).toEqual(errorBody(400, 'unknown_entitlement'));
      expect(await stored(org)).toEqual([]);
      expect(await auditOf(org)).toEqual([]);
    });

    it("a member cannot read another organisation's entitlements (403), nor change overrides at all", async () => {
      const org = (await createOrganisation(t)).id;
      const other = (await createOrganisation(t)).id;
      const member = await createUserWithSession(t, { org: other });
      await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set(member.auth).expect(403);
      await t.http().get(`/api/admin/organisations/${org}/overrides`).set(member.auth).expect(403);
    });
  });
});
