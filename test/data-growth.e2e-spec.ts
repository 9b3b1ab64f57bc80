import { hashToken, SessionService } from '../src/identity/session.service';
import { createUserWithSession, startTestApp, TestApp } from './support/test-app';

describe('what grows with data is pruned where it is cheap', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("a new session deletes the user's expired and revoked ones, and keeps the live ones", async () => {
    const user = await createUserWithSession(t);
    const sessions = t.app.get(SessionService);
    const revoked = await sessions.create(t.db.manager, user.id, 3600);
    const expired = await sessions.create(t.db.manager, user.id, 3600);
    await sessions.revoke(t.db.manager, revoked.token);
    await t.db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [hashToken(expired.token)]);
    const other = await createUserWithSession(t);
    await t.db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [other.id]);
    const count = async (id: string) => (await t.db.query(`SELECT count(*)::int AS n FROM sessions WHERE user_id = $1`, [id]))[0].n;
    expect(await count(user.id)).toBe(3);

    const fresh = await sessions.create(t.db.manager, user.id, 3600);
    // The first session (live) and the new one remain; another user's expired session is left to its owner.
    expect(await count(user.id)).toBe(2);
    expect(await count(other.id)).toBe(1);
    await t.http().get('/api/me').set(user.auth).expect(200);
    await t.http().get('/api/me').set('Authorization', `Bearer ${fresh.token}`).expect(200);
    await t.http().get('/api/me').set('Authorization', `Bearer ${revoked.token}`).expect(401);
  });
});
