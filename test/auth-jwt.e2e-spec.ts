import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, JWK, SignJWT, CryptoKey } from 'jose';
import type { Request } from 'express';
import { AppConfig } from '../src/config/app-config';
import { IdentityRepository } from '../src/identity/identity.repository';
import { JWKS_FAILURE_CACHE_MS, JwtStrategy } from '../src/identity/jwt.strategy';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

/*
 * The web app's own access tokens (spec §3, AUTH_JWT_*): verified against a JWKS served by a local HTTP
 * server, through the real app over HTTP. One app with JWTs on (issuer and audience checked), one beside it
 * on the same database with JWTs off. The JWKS cache's 30 s rule is followed through the server's hit count;
 * where the time since the last fetch matters, Date.now (which jose's cache reads) is moved forward.
 */

const ISSUER = 'https://app.example.com';
const AUDIENCE = 'billing';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A JWKS endpoint whose keys and behaviour the tests change, counting every request it gets. */
class JwksServer {
  keys: JWK[] = [];
  mode: 'ok' | 'unreachable' | 'error' | 'garbage' = 'ok';
  hits = 0;
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.hits++;
      if (this.mode === 'unreachable') return void req.socket.destroy();
      if (this.mode === 'error') return void res.writeHead(500).end('oops');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(this.mode === 'garbage' ? '<html>not a key set</html>' : JSON.stringify({ keys: this.keys }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/.well-known/jwks.json`;
  }

  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const nowS = () => Math.floor(Date.now() / 1000);

describe('JWT access tokens (AUTH_JWT_*)', () => {
  const jwks = new JwksServer();
  const logLines: string[] = [];
  // Every token the tests send, so that the log can be searched for them.
  const issued: string[] = [];
  let t: TestApp;
  let off: TestApp;
  let rsa: SigningKey;
  let ec: SigningKey;
  let rotated: SigningKey;
  let org: { id: string };
  let owner: Awaited<ReturnType<typeof createUserWithSession>> & { externalId: string };
  let member: typeof owner;
  let outsider: typeof owner;
  let shiftMs = 0;
  const realNow = Date.now.bind(Date);

  /** Moves Date.now forward (jose's JWKS cache keys its 30 s cooldown on it); `new Date()`, used for exp/nbf, is untouched. */
  function advanceClock(ms: number) {
    shiftMs += ms;
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + shiftMs);
  }

  async function sign(
    key: SigningKey,
    claims: { sub?: string | null; iss?: string; aud?: string | null; exp?: number | null; nbf?: number } = {},
    kid = key.kid,
  ): Promise<string> {
    const payload: Record<string, unknown> = {
      sub: claims.sub === undefined ? owner.externalId : claims.sub,
      iss: claims.iss ?? ISSUER,
      aud: claims.aud === undefined ? AUDIENCE : claims.aud,
      iat: nowS(),
      exp: claims.exp === undefined ? nowS() + 300 : claims.exp,
      nbf: claims.nbf,
    };
    for (const name of Object.keys(payload)) if (payload[name] === null || payload[name] === undefined) delete payload[name];
    const token = await new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid }).sign(key.privateKey);
    issued.push(token);
    return token;
  }

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const history = (app: TestApp, token: string, orgId = org.id) =>
    app.http().get('/api/billing/history').query({ organisation_id: orgId }).set(bearer(token));
  const status = (app: TestApp, token: string, orgId = org.id) =>
    app.http().get('/api/licensing/status').query({ organisation_id: orgId }).set(bearer(token));
  /** Both kinds of session route answer `code` for the token: one verified by the guard, one by the status statement. */
  async function expectBoth(app: TestApp, token: string, code: number) {
    await history(app, token).expect(code);
    await status(app, token).expect(code);
  }

  const UNAUTHENTICATED = { statusCode: 401, error: 'Unauthorized', message: 'A valid session is required.', code: 'unauthenticated' };

  async function withExternalId(app: TestApp, user: Awaited<ReturnType<typeof createUserWithSession>>, tag: string) {
    const externalId = `${tag}-${user.id}`;
    await app.db.query('UPDATE users SET external_id = $1 WHERE id = $2', [externalId, user.id]);
    return { ...user, externalId };
  }

  beforeAll(async () => {
    [rsa, ec, rotated] = await Promise.all([signingKey('rsa-1', 'RS256'), signingKey('ec-1', 'ES256'), signingKey('rsa-2', 'RS256')]);
    jwks.keys = [rsa.jwk, ec.jwk];
    const jwksUrl = await jwks.start();
    off = await startTestApp();
    // Started last: Nest's Logger writes through the logger of the last app created, so this one's lines are kept.
    t = await startTestApp({
      databaseUrl: off.databaseUrl,
      env: { AUTH_JWT_JWKS_URL: jwksUrl, AUTH_JWT_ISSUER: ISSUER, AUTH_JWT_AUDIENCE: AUDIENCE },
      logLines,
    });
    org = await createOrganisation(t);
    owner = await withExternalId(t, await createUserWithSession(t, { org: org.id, role: 'owner' }), 'owner');
    member = await withExternalId(t, await createUserWithSession(t, { org: org.id, role: 'member' }), 'member');
    outsider = await withExternalId(t, await createUserWithSession(t), 'outsider');
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t?.close();
    await off?.close();
    await jwks.stop();
  });

  it('RS256 and ES256 tokens of a member are accepted on session routes and on the status read; the keys are fetched once', async () => {
    for (const key of [rsa, ec]) {
      const token = await sign(key);
      expect((await history(t, token).expect(200)).body).toEqual({ data: [], has_more: false });
      const read = await status(t, token).expect(200);
      expect(read.body.license).toEqual({ is_active: true, is_expired: false, tier: 'free' });
      expect(read.body.usage.users.used).toBe(2);
      await t.http().get('/api/licensing/check').query({ organisation_id: org.id, metric: 'projects', amount: 1 }).set(bearer(token)).expect(200);
      // Signed entitlements and the explanation take the same callers.
      const signed = await t.http().get('/api/licensing/entitlements/token').query({ organisation_id: org.id }).set(bearer(token)).expect(200);
      expect(signed.body.token.split('.')).toHaveLength(3);
      expect((await t.http().get('/api/licensing/explain').query({ organisation_id: org.id }).set(bearer(token)).expect(200)).body.tier).toBe('free');
      // So do the credits reads (spec §16.2).
      expect((await t.http().get('/api/licensing/credits').query({ organisation_id: org.id }).set(bearer(token)).expect(200)).body).toEqual({ data: [] });
      expect((await t.http().get('/api/licensing/credits/ledger').query({ organisation_id: org.id }).set(bearer(token)).expect(200)).body).toEqual({
        data: [],
        has_more: false,
      });
    }
    expect(jwks.hits).toBe(1);
  });

  it('memberships and roles come from this service: 403 for a non-member and for a member where owner is needed, as for a session', async () => {
    const outsiderJwt = await sign(rsa, { sub: outsider.externalId });
    for (const path of ['/api/licensing/entitlements/token', '/api/licensing/explain', '/api/licensing/credits', '/api/licensing/credits/ledger']) {
      await t.http().get(path).query({ organisation_id: org.id }).set(bearer(outsiderJwt)).expect(403);
    }
    for (const read of [history, status]) {
      const byJwt = await read(t, outsiderJwt).expect(403);
      const bySession = await read(t, outsider.token).expect(403);
      expect(byJwt.body).toEqual(bySession.body);
      expect(byJwt.body.code).toBe('organisation_forbidden');
    }
    const portal = (token: string) => t.http().get('/api/billing/portal').query({ organisation_id: org.id }).set(bearer(token));
    expect((await portal(await sign(ec, { sub: member.externalId })).expect(403)).body.code).toBe('role_forbidden');
    // The owner passes the role check and meets the organisation's state: it has no provider customer yet.
    expect((await portal(await sign(ec, { sub: owner.externalId })).expect(404)).body.code).toBe('no_customer');
  });

  it('exp and nbf are checked with 60 s of leeway; a token without exp is refused', async () => {
    await expectBoth(t, await sign(rsa, { exp: nowS() - 30 }), 200);
    await expectBoth(t, await sign(rsa, { exp: nowS() - 120 }), 401);
    await expectBoth(t, await sign(rsa, { nbf: nowS() + 30 }), 200);
    await expectBoth(t, await sign(rsa, { nbf: nowS() + 120 }), 401);
    await expectBoth(t, await sign(rsa, { exp: null }), 401);
  });

  it('iss and aud must be the configured ones', async () => {
    await expectBoth(t, await sign(rsa, { iss: 'https://evil.example.com' }), 401);
    await expectBoth(t, await sign(ec, { aud: 'another-service' }), 401);
    await expectBoth(t, await sign(ec, { aud: null }), 401);
  });

  it('refuses alg none, HS256 signed with the RSA public key, and a signature by another key, without fetching the JWKS', async () => {
    const hits = jwks.hits;
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const claims = { sub: owner.externalId, iss: ISSUER, aud: AUDIENCE, iat: nowS(), exp: nowS() + 300 };
    const none = `${b64({ alg: 'none', kid: rsa.kid })}.${b64(claims)}.`;
    // The classic confusion: a verifier that lets the token pick the algorithm would use the public key as an HMAC secret.
    const publicPem = await exportSPKI(rsa.publicKey);
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(new TextEncoder().encode(publicPem));
    const impostor = await signingKey(rsa.kid, 'RS256');
    const forged = await sign(impostor);
    issued.push(none, hmac);
    for (const token of [none, hmac, forged]) {
      expect((await history(t, token).expect(401)).body).toEqual(UNAUTHENTICATED);
      expect((await status(t, token).expect(401)).body).toEqual(UNAUTHENTICATED);
    }
    expect(jwks.hits).toBe(hits);
  });

  it('401, with the body of a bad session, for an unknown sub, a missing sub, or a malformed token', async () => {
    const unknownSession = await history(t, 'x'.repeat(43)).expect(401);
    expect(unknownSession.body).toEqual(UNAUTHENTICATED);
    for (const token of [await sign(rsa, { sub: 'nobody-has-this-id' }), await sign(ec, { sub: null }), 'abc.def.ghi']) {
      expect((await history(t, token).expect(401)).body).toEqual(UNAUTHENTICATED);
      expect((await status(t, token).expect(401)).body).toEqual(UNAUTHENTICATED);
    }
  });

  it('sessions keep working beside JWTs (bearer and cookie), and service-key routes refuse a JWT as a user credential', async () => {
    await expectBoth(t, owner.token, 200);
    await t.http().get('/api/licensing/status').query({ organisation_id: org.id }).set('Cookie', `session=${owner.token}`).expect(200);
    const usage = await t.http().post('/api/licensing/usage').set(bearer(await sign(rsa))).send({}).expect(403);
    expect(usage.body.code).toBe('session_not_accepted');
  });

  it('key rotation: an unknown kid re-fetches the JWKS once the last fetch is 30 s old, then is accepted; within 30 s another is refused unfetched', async () => {
    jwks.keys = [rsa.jwk, ec.jwk, rotated.jwk];
    const newKey = await sign(rotated);
    // The first fetch was moments ago: the new kid is refused without asking the JWKS again.
    let hits = jwks.hits;
    await history(t, newKey).expect(401);
    expect(jwks.hits).toBe(hits);

    advanceClock(31_000);
    await history(t, newKey).expect(200);
    expect(jwks.hits).toBe(hits + 1);
    await status(t, newKey).expect(200);
    // Within 30 s of that fetch: a second unknown kid is refused, and the JWKS is not asked.
    const unknown = await sign(rotated, {}, 'rsa-unknown');
    await history(t, unknown).expect(401);
    expect(jwks.hits).toBe(hits + 1);
    // 30 s later it is asked again (and the kid is still unknown).
    advanceClock(30_000);
    hits = jwks.hits;
    await history(t, unknown).expect(401);
    expect(jwks.hits).toBe(hits + 1);
  });

  it('a JWKS that cannot be reached or answers no key set: 503 jwks_unavailable for an uncached kid, while cached keys keep working', async () => {
    const uncached = await signingKey('rsa-3', 'RS256');
    for (const mode of ['unreachable', 'error', 'garbage'] as const) {
      jwks.mode = mode;
      advanceClock(31_000);
      const hits = jwks.hits;
      const res = await history(t, await sign(uncached)).expect(503);
      expect(res.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The keys that sign this token could not be fetched. Try again shortly.',
        code: 'jwks_unavailable',
      });
      expect(jwks.hits).toBe(hits + 1);
      await status(t, await sign(uncached)).expect(503);
      await expectBoth(t, await sign(rsa), 200);
      await expectBoth(t, await sign(ec), 200);
    }
    // Even when the periodic background refresh (every 10 minutes) fails, the cached keys stay in use.
    advanceClock(11 * 60_000);
    const hits = jwks.hits;
    await expectBoth(t, await sign(rsa), 200);
    await waitFor('the JWKS to be fetched again', () => jwks.hits > hits, 5_000);
    await expectBoth(t, await sign(rotated), 200);
    jwks.mode = 'ok';
  });

  it('a failing JWKS is asked once at a time and its failure cached for a few seconds: 100 tokens with unknown kids, one request', async () => {
    jwks.mode = 'error';
    advanceClock(31_000);
    const hits = jwks.hits;
    const unknownKids = await Promise.all(Array.from({ length: 100 }, (_, i) => signingKey(`burst-${i}`, 'ES256')));
    // 50 at once, then 50 one after another: all 503, and the JWKS heard from this instance once.
    const burst = await Promise.all(unknownKids.slice(0, 50).map(async (key) => (await history(t, await sign(key))).status));
    for (const key of unknownKids.slice(50)) burst.push((await history(t, await sign(key))).status);
    expect(burst).toEqual(Array(100).fill(503));
    expect(jwks.hits).toBe(hits + 1);
    // Cached keys are not affected.
    await expectBoth(t, await sign(rsa), 200);

    // Once the failure is JWKS_FAILURE_CACHE_MS old, the next unknown kid asks again (once).
    advanceClock(JWKS_FAILURE_CACHE_MS);
    await history(t, await sign(unknownKids[0])).expect(503);
    expect(jwks.hits).toBe(hits + 2);
    await history(t, await sign(unknownKids[1])).expect(503);
    expect(jwks.hits).toBe(hits + 2);

    // The JWKS recovers with a new key: after the window, a token signed by it is accepted (spec §3's 30 s
    // rule counts from the last successful fetch, long ago).
    jwks.mode = 'ok';
    jwks.keys = [rsa.jwk, ec.jwk, rotated.jwk, unknownKids[2].jwk];
    await history(t, await sign(unknownKids[2])).expect(503);
    advanceClock(JWKS_FAILURE_CACHE_MS);
    await history(t, await sign(unknownKids[2])).expect(200);
    expect(jwks.hits).toBe(hits + 3);
  });

  it('a key the web app retires stops being trusted after the background refresh (every 10 minutes)', async () => {
    jwks.keys = [ec.jwk, rotated.jwk];
    advanceClock(11 * 60_000);
    const hits = jwks.hits;
    // This request starts the refresh and does not wait for it: the cached key still answers it.
    await history(t, await sign(rsa)).expect(200);
    await waitFor('the JWKS to be fetched again', () => jwks.hits > hits, 5_000);
    const retired = await sign(rsa);
    await waitFor('the retired key to be refused', async () => (await history(t, retired)).status === 401, 5_000);
    await expectBoth(t, await sign(ec), 200);
    await expectBoth(t, await sign(rotated), 200);
  });

  it('with AUTH_JWT_JWKS_URL unset, a JWT is refused like an unknown session; sessions work', async () => {
    const token = await sign(rsa);
    expect((await history(off, token).expect(401)).body).toEqual(UNAUTHENTICATED);
    expect((await status(off, token).expect(401)).body).toEqual(UNAUTHENTICATED);
    await expectBoth(off, owner.token, 200);
  });

  it('warns at start about a plain-http JWKS URL in production, and accepts it', () => {
    const before = logLines.length;
    const config = Object.assign(new AppConfig(), { nodeEnv: 'production', authJwt: { jwksUrl: new URL('http://auth.internal/jwks') } });
    expect(new JwtStrategy(config, t.app.get(IdentityRepository)).accepts({ headers: { authorization: `Bearer ${issued[0]}` } } as Request)).toBe(true);
    expect(logLines.slice(before).join('\n')).toContain('AUTH_JWT_JWKS_URL is plain http in production');
  });

  it('never logs a token', () => {
    expect(logLines.length).toBeGreaterThan(0);
    const log = logLines.join('\n');
    expect(log).toContain('JWKS could not be fetched');
    for (const token of issued) {
      expect(log).not.toContain(token);
      // Nor its signature alone.
      expect(log).not.toContain(token.split('.')[2] || '\u0000');
    }
  });
});
