import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { MACHINE_KEY_FILE } from '../src/config/entitlement-keys';
import { errorBody } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const pkcs8 = (key: ReturnType<typeof generateKeyPairSync>['privateKey']) => key.export({ format: 'pem', type: 'pkcs8' }).toString();
const newEd25519 = () => pkcs8(generateKeyPairSync('ed25519').privateKey);
const newP256 = () => pkcs8(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);

async function jwksOf(t: TestApp) {
  const res = await fetch(`${t.baseUrl}/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('public, max-age=300');
  return (await res.json()) as { keys: Record<string, string>[] };
}

describe('GET /.well-known/jwks.json', () => {
  it("development without ENTITLEMENT_SIGNING_KEYS: this machine's generated Ed25519 key, the same after a restart, public half only", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'billing-jwks-'));
    const logLines: string[] = [];
    const first = await startTestApp({ env: { DATA_DIR: dataDir }, logLines });
    let kid: string;
    try {
      const { keys } = await jwksOf(first);
      expect(keys).toEqual([{ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid: expect.any(String), alg: 'EdDSA', use: 'sig' }]);
      kid = keys[0].kid;
      expect(logLines.some((line) => line.includes(`entitlement signing key generated for this machine (kid ${kid}`))).toBe(true);
    } finally {
      await first.close();
    }
    const again = await startTestApp({ env: { DATA_DIR: dataDir } });
    try {
      expect((await jwksOf(again)).keys.map((k) => k.kid)).toEqual([kid]);
    } finally {
      await again.close();
    }
  });

  it('publishes every configured key in order, Ed25519 and P-256, and writes no key of its own', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'billing-jwks-'));
    const t = await startTestApp({ env: { DATA_DIR: dataDir, ENTITLEMENT_SIGNING_KEYS: `${newP256()}${newEd25519()}` } });
    try {
      const { keys } = await jwksOf(t);
      expect(keys.map((k) => [k.kty, k.crv, k.alg])).toEqual([
        ['EC', 'P-256', 'ES256'],
        ['OKP', 'Ed25519', 'EdDSA'],
      ]);
      expect(keys.every((k) => !('d' in k))).toBe(true);
      expect(keys.map((k) => k.kid)).toEqual(t.config.entitlementSigningKeys.map((k) => k.kid));
      expect(readdirSync(dataDir)).not.toContain(MACHINE_KEY_FILE);
    } finally {
      await t.close();
    }
  });

  it('production without ENTITLEMENT_SIGNING_KEYS: the start says so at error level, and the set is empty', async () => {
    const logLines: string[] = [];
    const t = await startTestApp({ env: { NODE_ENV: 'production', PAYPROVIDER_SANDBOX: 'true' }, logLines });
    try {
      expect((await jwksOf(t)).keys).toEqual([]);
      const said = logLines.map((line) => JSON.parse(line) as { level: number; msg: string }).find((l) => l.msg?.includes('ENTITLEMENT_SIGNING_KEYS is not set'));
      expect(said?.level).toBe(50);
    } finally {
      await t.close();
    }
  });
});

const KEY = 'svc_token_key_0123456789';
const ISSUER = 'https://billing.example.com';

describe('GET /api/licensing/entitlements/token', () => {
  const [oldKey, newKey] = [newEd25519(), newP256()];
  // `before` signs with the old key alone; `during` the rotation lists the new key first and still the old one;
  // `after` lists only the new key. All on one database.
  let before: TestApp;
  let during: TestApp;
  let after: TestApp;
  let production: TestApp;
  beforeAll(async () => {
    const env = { SERVICE_API_KEYS: KEY, PUBLIC_URL: ISSUER, ENTITLEMENT_TOKEN_MAX_TTL_S: '86400' };
    before = await startTestApp({ env: { ...env, ENTITLEMENT_SIGNING_KEYS: oldKey } });
    during = await startTestApp({ databaseUrl: before.databaseUrl, env: { ...env, ENTITLEMENT_SIGNING_KEYS: `${newKey}${oldKey}` } });
    after = await startTestApp({ databaseUrl: before.databaseUrl, env: { ...env, ENTITLEMENT_SIGNING_KEYS: newKey } });
    production = await startTestApp({ databaseUrl: before.databaseUrl, env: { ...env, NODE_ENV: 'production', PAYPROVIDER_SANDBOX: 'true' } });
  });
  afterAll(async () => {
    await production?.close();
    await after?.close();
    await during?.close();
    await before?.close();
  });

  const tokenOf = (t: TestApp, organisationId: string, auth: Record<string, string> = { 'X-Service-Key': KEY }, ttl?: string) =>
    t.http().get('/api/licensing/entitlements/token').query({ organisation_id: organisationId, ...(ttl === undefined ? {} : { ttl_s: ttl }) }).set(auth);
  /** Verifies as a web app would: against the JWKS the service publishes, fetched over HTTP. */
  const verifyWith = (t: TestApp, token: string, currentDate?: Date) =>
    jwtVerify(token, createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`)), { issuer: ISSUER, currentDate });

  it("signs the entitlements read without usage: verified with jose against the published JWKS, the read's values, iss/sub/iat/exp", async () => {
    const org = (await createOrganisation(before)).id;
    const member = await createUserWithSession(before, { org, role: 'member' });
    // Usage exists: the token must not carry it.
    await before.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'projects', amount: 2 }).expect(200);
    const res = await tokenOf(before, org, member.auth).expect(200);
    expect(res.body).toEqual({ token: expect.any(String), expires_at: expect.any(String) });
    const { payload, protectedHeader } = await verifyWith(before, res.body.token);
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: before.config.entitlementSigningKeys[0].kid, typ: 'JWT' });

    const read = (await before.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body;
    const limits = Object.fromEntries(Object.entries(read.limits as Record<string, { limit: number; overage: string; source: string }>).map(([m, l]) => [m, { limit: l.limit, overage: l.overage, source: l.source }]));
    expect(payload).toEqual({
      organisation_id: org,
      tier: read.tier,
      is_active: read.is_active,
      is_expired: read.is_expired,
      version: read.version,
      seats: read.seats,
      features: read.features,
      limits,
      iss: ISSUER,
      sub: org,
      iat: expect.any(Number),
      exp: payload.iat! + 3600,
    });
    expect(read.limits.projects.used).toBe(2);
    expect(JSON.stringify(payload)).not.toMatch(/used|at_capacity|@/);
    expect(res.body.expires_at).toBe(new Date(payload.exp! * 1000).toISOString());
  });

  it('ttl_s: 60 up to ENTITLEMENT_TOKEN_MAX_TTL_S; below, above, or not digits → 400 and no token', async () => {
    const org = (await createOrganisation(before)).id;
    for (const ttl of ['60', '86400']) {
      const { body } = await tokenOf(before, org, undefined, ttl).expect(200);
      const { payload } = await verifyWith(before, body.token);
      expect([ttl, payload.exp! - payload.iat!]).toEqual([ttl, Number(ttl)]);
    }
    for (const ttl of ['59', '0', '86401', '315360001', '1.5', '1e3', 'abc', '']) {
      const res = await tokenOf(before, org, undefined, ttl);
      expect([ttl, res.status, res.body.code]).toEqual([ttl, 400, 'validation_failed']);
    }
  });

  it('the same callers as the read: 401 without a credential, 403 for a stranger, 404 for an unknown organisation', async () => {
    const org = (await createOrganisation(before)).id;
    expect((await tokenOf(before, org, {}).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
    const stranger = await createUserWithSession(before, { org: (await createOrganisation(before)).id });
    expect((await tokenOf(before, org, stranger.auth).expect(403)).body).toEqual(errorBody(403, 'organisation_forbidden'));
    expect((await tokenOf(before, '00000000-0000-4000-8000-000000000000').expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
    expect((await tokenOf(before, 'nope').expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
  });

  it('rotation: the new first key signs; a token of the old key verifies while it is listed, and not once it is gone', async () => {
    const org = (await createOrganisation(before)).id;
    const old = (await tokenOf(before, org).expect(200)).body.token;
    const rotated = (await tokenOf(during, org).expect(200)).body.token;
    expect(decodeProtectedHeader(rotated)).toMatchObject({ alg: 'ES256', kid: during.config.entitlementSigningKeys[0].kid });
    expect(decodeProtectedHeader(old).kid).toBe(during.config.entitlementSigningKeys[1].kid);
    // During the rotation both verify against the published set.
    expect((await verifyWith(during, old)).payload.sub).toBe(org);
    expect((await verifyWith(during, rotated)).payload.sub).toBe(org);
    // Once the old key is removed, its tokens no longer verify; the new one's still do.
    await expect(verifyWith(after, old)).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect((await verifyWith(after, rotated)).payload.sub).toBe(org);
    expect(decodeProtectedHeader((await tokenOf(after, org).expect(200)).body.token).kid).toBe(decodeProtectedHeader(rotated).kid);
  });

  it('expiry: refused once exp has passed (the verifier\'s clock moved, not slept)', async () => {
    const org = (await createOrganisation(before)).id;
    const { token } = (await tokenOf(before, org, undefined, '60').expect(200)).body;
    const { payload } = await verifyWith(before, token);
    expect((await verifyWith(before, token, new Date((payload.exp! - 1) * 1000))).payload.sub).toBe(org);
    await expect(verifyWith(before, token, new Date((payload.exp! + 1) * 1000))).rejects.toBeInstanceOf(errors.JWTExpired);
  });

  it('tampering: a changed payload, a changed header or another key\'s signature does not verify', async () => {
    const org = (await createOrganisation(before)).id;
    const { token } = (await tokenOf(before, org).expect(200)).body;
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const upgraded = Buffer.from(JSON.stringify({ ...claims, tier: 'enterprise' })).toString('base64url');
    await expect(verifyWith(before, `${header}.${upgraded}.${signature}`)).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    const otherKid = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: 'someone-else', typ: 'JWT' })).toString('base64url');
    await expect(verifyWith(before, `${otherKid}.${payload}.${signature}`)).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey);
    // A token signed by a key the service does not publish, under a kid it does.
    const foreign = (await tokenOf(after, org).expect(200)).body.token.split('.');
    await expect(verifyWith(before, `${header}.${payload}.${foreign[2]}`)).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
  });

  it('production without ENTITLEMENT_SIGNING_KEYS: 503 signing_key_missing to an allowed caller (401 still first), nothing signed', async () => {
    const org = (await createOrganisation(production)).id;
    expect((await tokenOf(production, org).expect(503)).body).toEqual(errorBody(503, 'signing_key_missing'));
    await tokenOf(production, org, {}).expect(401);
  });
});
