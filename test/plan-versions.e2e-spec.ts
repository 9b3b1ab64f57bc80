import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TIERS_FILE } from '../src/config/tiers';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { startTestApp, TestApp } from './support/test-app';

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plan-versions-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

/**
 * Plan versions (spec §17): each start records a tier's definition (with its price ids) as its next version when
 * it differs from the newest; an unchanged table records nothing, and instances starting together record one.
 */
describe('plan versions: recorded at start', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  const env = (extra: Record<string, string> = {}) => ({ ...fakeProviderEnv(fake), PAYPROVIDER_PRICE_PRO: 'price_pro_1', PAYPROVIDER_PRICE_TEAM: 'price_team_1', ...extra });
  const start = (extra: Record<string, string> = {}) => startTestApp({ databaseUrl: database.url, env: env(extra), skipPriceWait: true });
  const versions = async (t: TestApp) =>
    (await t.db.query(`SELECT tier, version, definition FROM plan_versions ORDER BY tier, version`)) as { tier: string; version: number; definition: any }[];

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro_1', 'price_pro_2', 'price_team_1'] });
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await fake.close();
    await database.drop();
  });

  it('the first start records version 1 of every tier: what it grants and the price ids that sell it', async () => {
    const t = await start();
    try {
      const rows = await versions(t);
      expect(rows.map((r) => [r.tier, r.version])).toEqual([
        ['enterprise', 1],
        ['free', 1],
        ['pro', 1],
        ['team', 1],
      ]);
      expect(rows.find((r) => r.tier === 'pro')!.definition).toEqual({
        per_seat: false,
        trial_days: 0,
        limits: { projects: 25, ai_tokens: 2_000_000, users: 10 },
        overage: { projects: 'block', ai_tokens: 'block', users: 'block' },
        rollover: {},
        features: { api_access: true },
        prices: ['price_pro_1'],
      });
      // The free tier grants no feature and sells nothing.
      expect(rows.find((r) => r.tier === 'free')!.definition).toMatchObject({ features: {}, prices: [] });
    } finally {
      await t.close();
    }
  });

  it('an unchanged table records nothing', async () => {
    const t = await start();
    try {
      expect((await versions(t)).length).toBe(4);
    } finally {
      await t.close();
    }
  });

  const raised = { ...DEFAULT_TIERS_FILE, pro: { ...DEFAULT_TIERS_FILE.pro, projects: 30 } };

  it('a changed limit, or another price id, is the tier’s next version; the other tiers keep theirs', async () => {
    let t = await start({ TIERS_FILE: tiersFile(raised) });
    try {
      const rows = await versions(t);
      expect(rows.filter((r) => r.tier === 'pro').map((r) => [r.version, r.definition.limits.projects])).toEqual([
        [1, 25],
        [2, 30],
      ]);
      expect(rows.filter((r) => r.tier !== 'pro').every((r) => r.version === 1)).toBe(true);
    } finally {
      await t.close();
    }
    t = await start({ TIERS_FILE: tiersFile(raised), PAYPROVIDER_PRICE_PRO: 'price_pro_2,price_pro_1' });
    try {
      const pro = (await versions(t)).filter((r) => r.tier === 'pro');
      expect(pro.map((r) => [r.version, r.definition.prices])).toEqual([
        [1, ['price_pro_1']],
        [2, ['price_pro_1']],
        [3, ['price_pro_2', 'price_pro_1']],
      ]);
    } finally {
      await t.close();
    }
  });

  it('two instances starting together with a new table record its change once; a feature added to one tier changes no other', async () => {
    const table = tiersFile({ ...raised, team: { ...raised.team, features: { ...raised.team.features, sso: true } } });
    const extra = { TIERS_FILE: table, PAYPROVIDER_PRICE_PRO: 'price_pro_2,price_pro_1' };
    const [a, b] = await Promise.all([start(extra), start(extra)]);
    try {
      const rows = await versions(a);
      expect(rows.filter((r) => r.tier === 'team').map((r) => [r.version, r.definition.features])).toEqual([
        [1, { api_access: true, audit_log: true }],
        [2, { api_access: true, audit_log: true, sso: true }],
      ]);
      // sso is now a feature of the table (false for pro, free), which changes neither's definition.
      expect(rows.filter((r) => r.tier !== 'team').map((r) => [r.tier, r.version]).filter(([, v]) => v !== 1)).toEqual([
        ['pro', 2],
        ['pro', 3],
      ]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a version is never edited or deleted', async () => {
    const t = await start();
    try {
      await expect(t.db.query(`UPDATE plan_versions SET definition = '{}' WHERE tier = 'pro' AND version = 1`)).rejects.toThrow(/never edited or deleted/);
      await expect(t.db.query(`DELETE FROM plan_versions WHERE tier = 'pro'`)).rejects.toThrow(/never edited or deleted/);
      expect((await versions(t)).filter((r) => r.tier === 'pro')[0].definition.limits.projects).toBe(25);
    } finally {
      await t.close();
    }
  });
});
