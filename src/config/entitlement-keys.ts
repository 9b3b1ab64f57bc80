import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, JsonWebKey, KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A private key that signs entitlement tokens (spec §12), with the JWS algorithm its type implies. */
export interface SigningKey {
  kid: string;
  alg: 'EdDSA' | 'ES256';
  privateKey: KeyObject;
}

/** Where the development key is kept, in DATA_DIR. */
export const MACHINE_KEY_FILE = 'entitlement-signing-key.json';

/**
 * ENTITLEMENT_SIGNING_KEYS, as keys: a JWK (`{"kty":…,"d":…}`), a JSON array of JWKs, a JWK set
 * (`{"keys":[…]}`), or one or more PEM private keys one after the other (PKCS #8 or SEC 1; `\n` may be written
 * as the two characters `\n`, for env files that hold one line). Ed25519 signs with EdDSA, P-256 with ES256;
 * any other key is refused. The `kid` is the JWK's own, else its RFC 7638 thumbprint, so that it is stable
 * across restarts and instances. The order is kept: the first signs. Throws a message that never quotes a key.
 */
export function parseSigningKeys(value: string): SigningKey[] {
  const text = value.trim();
  const sources: { describe: string; key: KeyObject; kid?: string }[] = [];
  if (text.startsWith('{') || text.startsWith('[')) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error('ENTITLEMENT_SIGNING_KEYS is neither valid JSON (a JWK, an array of JWKs, {"keys":[…]}) nor PEM');
    }
    const jwks = Array.isArray(json) ? json : isRecord(json) && Array.isArray(json.keys) ? json.keys : [json];
    jwks.forEach((jwk: unknown, i) => {
      const describe = `key ${i + 1}`;
      if (!isRecord(jwk) || typeof jwk.kty !== 'string') throw new Error(`ENTITLEMENT_SIGNING_KEYS: ${describe} is not a JWK`);
      if (jwk.d === undefined) throw new Error(`ENTITLEMENT_SIGNING_KEYS: ${describe} is a public key; the private key (with "d") is needed`);
      sources.push({ describe, key: importKey(describe, { key: jwk as JsonWebKey, format: 'jwk' }), kid: typeof jwk.kid === 'string' ? jwk.kid : undefined });
    });
  } else {
    const pems = text.replace(/\\n/g, '\n').match(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g) ?? [];
    if (!pems.length) throw new Error('ENTITLEMENT_SIGNING_KEYS holds no private key: give JWKs (JSON) or PEM "-----BEGIN PRIVATE KEY-----" blocks');
    pems.forEach((pem, i) => sources.push({ describe: `key ${i + 1}`, key: importKey(`key ${i + 1}`, { key: pem, format: 'pem' }) }));
  }
  if (!sources.length) throw new Error('ENTITLEMENT_SIGNING_KEYS lists no key');
  const keys = sources.map(({ describe, key, kid }) => ({ kid: kid ?? thumbprint(key), alg: algorithmOf(describe, key), privateKey: key }));
  const kids = keys.map((k) => k.kid);
  const repeated = kids.find((kid, i) => kids.indexOf(kid) !== i);
  if (repeated !== undefined) throw new Error(`ENTITLEMENT_SIGNING_KEYS lists the key id "${repeated.slice(0, 64)}" twice`);
  return keys;
}

/**
 * A start-up step, not part of loading the configuration (which writes nothing): outside production, with no
 * ENTITLEMENT_SIGNING_KEYS, this machine gets one Ed25519 key, kept in DATA_DIR (mode 0600) so that tokens
 * stay verifiable across restarts. Like the generated webhook secret (webhook-secret.ts).
 */
export function machineSigningKey(dataDir: string): { key: SigningKey; created: boolean } {
  const file = join(dataDir, MACHINE_KEY_FILE);
  const created = !existsSync(file);
  if (created) {
    const { privateKey } = generateKeyPairSync('ed25519');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(privateKey.export({ format: 'jwk' }))}\n`, { mode: 0o600 });
  }
  const [key] = parseSigningKeys(readFileSync(file, 'utf8'));
  return { key, created };
}

/** A public key as the JWKS publishes it. */
export interface PublicSigningJwk {
  kty: string;
  crv: string;
  x: string;
  y?: string;
  kid: string;
  alg: SigningKey['alg'];
  use: 'sig';
}

/** The public half as published in the JWKS (`kid`, `alg`, `use`): no private member. */
export function publicJwk(key: SigningKey): PublicSigningJwk {
  const { kty, crv, x, y } = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return { kty: kty!, crv: crv!, x: x!, ...(y === undefined ? {} : { y }), kid: key.kid, alg: key.alg, use: 'sig' };
}

function importKey(describe: string, input: Parameters<typeof createPrivateKey>[0]): KeyObject {
  try {
    return createPrivateKey(input);
  } catch {
    throw new Error(`ENTITLEMENT_SIGNING_KEYS: ${describe} is not a readable private key`);
  }
}

function algorithmOf(describe: string, key: KeyObject): SigningKey['alg'] {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  const type = key.asymmetricKeyType === 'ec' ? `EC ${key.asymmetricKeyDetails?.namedCurve}` : key.asymmetricKeyType;
  throw new Error(`ENTITLEMENT_SIGNING_KEYS: ${describe} is ${type}; only Ed25519 (EdDSA) and P-256 (ES256) keys sign entitlements`);
}

/** RFC 7638: SHA-256 of the required public members in lexicographic order, base64url. */
function thumbprint(key: KeyObject): string {
  const { kty, crv, x, y } = createPublicKey(key).export({ format: 'jwk' });
  const members = kty === 'EC' ? { crv, kty, x, y } : { crv, kty, x };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
