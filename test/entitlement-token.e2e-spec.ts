import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MACHINE_KEY_FILE } from '../src/config/entitlement-keys';
import { startTestApp, TestApp } from './support/test-app';

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
