import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

describe('foundation: errors, request ids, sessions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const expectErrorShape = (body: Record<string, unknown>, status: number, code: string) => {
    expect(body).toEqual({ statusCode: status, error: expect.any(String), message: expect.any(String), code });
  };

  it('GET /api/health is public and reports the database', async () => {
    const res = await t.http().get('/api/health').expect(200);
    expect(res.body).toEqual({ status: 'ok', database: 'up', provider: 'sandbox' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps a well-formed incoming X-Request-Id and replaces a malformed one', async () => {
    const kept = await t.http().get('/api/health').set('X-Request-Id', 'trace-123').expect(200);
    expect(kept.headers['x-request-id']).toBe('trace-123');
    const replaced = await t.http().get('/api/health').set('X-Request-Id', 'bad id\twith spaces').expect(200);
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown routes with 404 in the error shape', async () => {
    const res = await t.http().get('/api/nope').expect(404);
    expectErrorShape(res.body, 404, 'not_found');
    expect(res.body.error).toBe('Not Found');
    expect(res.headers['x-request-id']).toBeDefined();
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await t.http().post('/api/me').set('Content-Type', 'application/json').send('{"a":').expect(400);
    expectErrorShape(res.body, 400, 'invalid_json');
  });

  it('answers a body over 1 MiB with 413', async () => {
    const big = JSON.stringify({ a: 'x'.repeat(1024 * 1024) });
    const res = await t.http().post('/api/me').set('Content-Type', 'application/json').send(big).expect(413);
    expectErrorShape(res.body, 413, 'payload_too_large');
    expect(res.headers['x-request-id']).toBeDefined();
  });

  describe('session guard', () => {
    it('401 without a session', async () => {
      const res = await t.http().get('/api/me').expect(401);
      expectErrorShape(res.body, 401, 'unauthenticated');
    });

    it('401 for an unknown token, a malformed header, and an empty cookie', async () => {
      await t.http().get('/api/me').set('Authorization', 'Bearer not-a-real-token').expect(401);
      await t.http().get('/api/me').set('Authorization', 'Basic dXNlcjpwYXNz').expect(401);
      await t.http().get('/api/me').set('Cookie', 'session=').expect(401);
    });

    it('accepts the bearer header and the session cookie', async () => {
      const org = await createOrganisation(t);
      const user = await createUserWithSession(t, { org: org.id, role: 'admin' });
      const viaHeader = await t.http().get('/api/me').set(user.auth).expect(200);
      expect(viaHeader.body).toEqual({
        user: { id: user.id, email: user.email, external_id: null },
        organisations: [{ id: org.id, name: org.name, external_id: null, role: 'admin', tier: 'free' }],
        has_more: false,
      });
      await t.http().get('/api/me').set('Cookie', `theme=dark; session=${encodeURIComponent(user.token)}`).expect(200);
    });

    it('401 once the session expired or was revoked', async () => {
      const user = await createUserWithSession(t);
      await t.http().get('/api/me').set(user.auth).expect(200);
      await t.db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [user.id]);
      await t.http().get('/api/me').set(user.auth).expect(401);

      const other = await createUserWithSession(t);
      await t.db.query(`UPDATE sessions SET revoked_at = now() WHERE user_id = $1`, [other.id]);
      await t.http().get('/api/me').set(other.auth).expect(401);
    });

    it('stores only the SHA-256 of a token', async () => {
      const user = await createUserWithSession(t);
      const rows = await t.db.query(`SELECT token_hash FROM sessions WHERE user_id = $1`, [user.id]);
      expect(rows).toHaveLength(1);
      expect(rows[0].token_hash).toHaveLength(32);
      expect(Buffer.from(rows[0].token_hash).toString('base64url')).not.toBe(user.token);
      expect(user.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });
  });
});

describe('two app instances in one process', () => {
  it('each authenticates against its own database, also after the other closed', async () => {
    const first = await startTestApp();
    const second = await startTestApp();
    const user = await createUserWithSession(first);
    await first.http().get('/api/me').set(user.auth).expect(200);
    // The token lives only in the first app's database.
    await second.http().get('/api/me').set(user.auth).expect(401);
    await second.close();
    await first.http().get('/api/me').set(user.auth).expect(200);
    await first.close();
  });
});
