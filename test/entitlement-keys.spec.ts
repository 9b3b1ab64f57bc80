import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint } from 'jose';
import { ConfigError, loadConfig } from '../src/config/app-config';
import { machineSigningKey, MACHINE_KEY_FILE, parseSigningKeys, publicJwk } from '../src/config/entitlement-keys';

const dataDir = () => mkdtempSync(join(tmpdir(), 'billing-keys-'));
const base = () => ({ DATA_DIR: dataDir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' });

const ed25519 = () => generateKeyPairSync('ed25519').privateKey;
const p256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const pem = (key: ReturnType<typeof ed25519>) => key.export({ format: 'pem', type: 'pkcs8' }).toString();
const jwk = (key: ReturnType<typeof ed25519>) => key.export({ format: 'jwk' });

describe('ENTITLEMENT_SIGNING_KEYS', () => {
  it('is unset by default (no key configured), and ENTITLEMENT_TOKEN_MAX_TTL_S defaults to 31 days', () => {
    const config = loadConfig(base());
    expect(config.entitlementSigningKeys).toEqual([]);
    expect(config.entitlementTokenMaxTtlS).toBe(31 * 86_400);
    expect(loadConfig({ ...base(), ENTITLEMENT_TOKEN_MAX_TTL_S: '86400' }).entitlementTokenMaxTtlS).toBe(86_400);
    expect(() => loadConfig({ ...base(), ENTITLEMENT_TOKEN_MAX_TTL_S: '59' })).toThrow(/ENTITLEMENT_TOKEN_MAX_TTL_S must be an integer from 60/);
  });

  it('reads PEM keys in order (also with \\n written out), Ed25519 as EdDSA and P-256 as ES256, each with its RFC 7638 thumbprint as kid', async () => {
    const [a, b] = [ed25519(), p256()];
    const keys = loadConfig({ ...base(), ENTITLEMENT_SIGNING_KEYS: `${pem(a)}${pem(b).replace(/\n/g, '\\n')}` }).entitlementSigningKeys;
    expect(keys.map((k) => k.alg)).toEqual(['EdDSA', 'ES256']);
    // The kid is the thumbprint jose computes for the public key.
    expect(keys[0].kid).toBe(await calculateJwkThumbprint(publicJwk(keys[0])));
    expect(keys[1].kid).toBe(await calculateJwkThumbprint(publicJwk(keys[1])));
    // A signature of the first key verifies with its published public half.
    const signature = sign(null, Buffer.from('x'), keys[0].privateKey);
    expect(verify(null, Buffer.from('x'), createPublicKey({ key: { ...publicJwk(keys[0]) }, format: 'jwk' }), signature)).toBe(true);
  });

  it('reads a JWK, an array of JWKs and a JWK set, keeping a kid given', () => {
    const [a, b] = [{ ...jwk(ed25519()), kid: 'key-2026-11' }, jwk(p256())];
    expect(parseSigningKeys(JSON.stringify(a)).map((k) => k.kid)).toEqual(['key-2026-11']);
    expect(parseSigningKeys(JSON.stringify([a, b])).map((k) => k.alg)).toEqual(['EdDSA', 'ES256']);
    expect(parseSigningKeys(JSON.stringify({ keys: [b, a] })).map((k) => k.alg)).toEqual(['ES256', 'EdDSA']);
  });

  it('publishes the public half only', () => {
    const [key] = parseSigningKeys(JSON.stringify(jwk(p256())));
    const published = publicJwk(key);
    expect(Object.keys(published).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect(published).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: key.kid });
  });

  it('refuses, without quoting the key: a public key, RSA, P-384, garbage, bad JSON, a kid twice', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    const { d: _secret, ...publicOnly } = jwk(ed25519());
    const twice = { ...jwk(ed25519()), kid: 'same' };
    const cases: [string, RegExp][] = [
      [JSON.stringify(publicOnly), /key 1 is a public key/],
      [pem(rsa), /key 1 is rsa; only Ed25519 \(EdDSA\) and P-256 \(ES256\)/],
      [`${pem(ed25519())}${pem(p384)}`, /key 2 is EC secp384r1/],
      ['not a key', /holds no private key/],
      ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----', /key 1 is not a readable private key/],
      ['{"kty":', /neither valid JSON/],
      [JSON.stringify([twice, { ...jwk(ed25519()), kid: 'same' }]), /the key id "same" twice/],
      ['[]', /lists no key/],
    ];
    for (const [value, message] of cases) {
      let error: unknown;
      try {
        loadConfig({ ...base(), ENTITLEMENT_SIGNING_KEYS: value });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      // No part of a key's material is echoed.
      for (const line of value.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'))) expect((error as Error).message).not.toContain(line.slice(0, 20));
    }
  });

  it('outside production, this machine gets one Ed25519 key, kept in DATA_DIR (0600) and reused; loading the configuration writes nothing', () => {
    const dir = dataDir();
    loadConfig({ DATA_DIR: dir, PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' });
    expect(readdirSync(dir)).toEqual([]);
    const first = machineSigningKey(dir);
    expect(first).toMatchObject({ created: true, key: { alg: 'EdDSA' } });
    expect(statSync(join(dir, MACHINE_KEY_FILE)).mode & 0o777).toBe(0o600);
    const second = machineSigningKey(dir);
    expect(second.created).toBe(false);
    expect(second.key.kid).toBe(first.key.kid);
  });
});
