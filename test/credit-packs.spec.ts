import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';
import { limitsOf } from '../src/config/tiers';

const dir = () => mkdtempSync(join(tmpdir(), 'billing-packs-'));
const TIERS = {
  free: { projects: 3, ai_tokens: 100_000, users: 3 },
  pro: { projects: 25, ai_tokens: 2_000_000, users: 10 },
};

function load(table: unknown, env: Record<string, string> = {}) {
  const file = join(dir(), 'tiers.json');
  writeFileSync(file, typeof table === 'string' ? table : JSON.stringify(table));
  return loadConfig({ DATA_DIR: dir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x', TIERS_FILE: file, ...env });
}

describe('TIERS_FILE with credit packs (spec §16.3)', () => {
  it('reads {"tiers", "credit_packs"}: the tiers as the bare table, each pack with its defaults', () => {
    const config = load({
      tiers: TIERS,
      credit_packs: { tokens_1m: { metric: 'ai_tokens', amount: 1_000_000, expires_after_days: 365 }, tokens_5m: { metric: 'ai_tokens', amount: 5_000_000 } },
    });
    expect(Object.keys(config.tiers)).toEqual(['free', 'pro']);
    expect(limitsOf(config.tiers.pro)).toEqual({ projects: 25, ai_tokens: 2_000_000, users: 10 });
    expect(config.creditPacks).toEqual({
      tokens_1m: { metric: 'ai_tokens', amount: 1_000_000, expiresAfterDays: 365 },
      tokens_5m: { metric: 'ai_tokens', amount: 5_000_000, expiresAfterDays: null },
    });
    // In the file's order.
    expect(Object.keys(config.creditPacks)).toEqual(['tokens_1m', 'tokens_5m']);
  });

  it('keeps the bare table valid (no packs), and the wrapped form without credit_packs', () => {
    expect(load(TIERS).creditPacks).toEqual({});
    expect(load({ tiers: TIERS }).creditPacks).toEqual({});
    // A bare table may call a tier "tiers": it has free, so it is the bare form.
    expect(Object.keys(load({ ...TIERS, tiers: TIERS.pro }).tiers)).toEqual(['free', 'pro', 'tiers']);
  });

  it.each([
    ['an unknown top-level field', { tiers: TIERS, packs: {} }, /has unknown field\(s\) packs \(allowed: tiers, credit_packs\)/],
    ['tiers without free', { tiers: { pro: TIERS.pro } }, /field "tiers": a "free" tier is required/],
    ['a bad tier inside tiers', { tiers: { ...TIERS, pro: { ...TIERS.pro, users: -1 } } }, /field "tiers": tier "pro" field "users" must be a non-negative integer/],
    ['credit_packs as a list', { tiers: TIERS, credit_packs: [] }, /"credit_packs" must be an object of pack name → pack/],
    ['an upper-case pack name', { tiers: TIERS, credit_packs: { Big: { metric: 'ai_tokens', amount: 1 } } }, /credit pack name "Big" must be lower-case/],
    ['a pack name with a dash', { tiers: TIERS, credit_packs: { 'big-one': { metric: 'ai_tokens', amount: 1 } } }, /credit pack name "big-one"/],
    ['a pack that is not an object', { tiers: TIERS, credit_packs: { big: 5 } }, /credit pack "big" must be an object/],
    ['an unknown pack field', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 1, price: 'price_1' } } }, /credit pack "big" has unknown field\(s\) price/],
    ['no metric', { tiers: TIERS, credit_packs: { big: { amount: 1 } } }, /credit pack "big" field "metric" is required/],
    ['a metric the table does not have', { tiers: TIERS, credit_packs: { big: { metric: 'gpu_hours', amount: 1 } } }, /credit pack "big" field "metric" names no metric of the tier table: "gpu_hours"/],
    ['projects (not per period)', { tiers: TIERS, credit_packs: { big: { metric: 'projects', amount: 1 } } }, /credit pack "big" field "metric" "projects" does not count per billing period/],
    ['users (not per period)', { tiers: TIERS, credit_packs: { big: { metric: 'users', amount: 1 } } }, /credit pack "big" field "metric" "users" does not count per billing period/],
    [
      'a further metric not declared per period',
      { tiers: { ...TIERS, pro: { ...TIERS.pro, metrics: { storage_gb: 10 } } }, credit_packs: { big: { metric: 'storage_gb', amount: 1 } } },
      /credit pack "big" field "metric" "storage_gb" does not count per billing period/,
    ],
    ['an amount of 0', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 0 } } }, /credit pack "big" field "amount" must be an integer from 1 to 1000000000000/],
    ['a fractional amount', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 1.5 } } }, /credit pack "big" field "amount"/],
    ['an amount beyond 10^12', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 1_000_000_000_001 } } }, /credit pack "big" field "amount"/],
    ['an amount as a string', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: '5' } } }, /credit pack "big" field "amount"/],
    ['an expiry of 0 days', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 1, expires_after_days: 0 } } }, /credit pack "big" field "expires_after_days" must be an integer from 1 to 3650/],
    ['an expiry of null', { tiers: TIERS, credit_packs: { big: { metric: 'ai_tokens', amount: 1, expires_after_days: null } } }, /field "expires_after_days"/],
  ])('stops the start on %s, naming the pack and the field', (_, table, message) => {
    expect(() => load(table)).toThrow(ConfigError);
    expect(() => load(table)).toThrow(message);
  });

  it('reads PAYPROVIDER_PRICE_PACK_<PACK> like a tier price (comma-separated, the first is sold)', () => {
    const config = load(
      { tiers: TIERS, credit_packs: { tokens_1m: { metric: 'ai_tokens', amount: 1_000_000 }, tokens_5m: { metric: 'ai_tokens', amount: 5_000_000 } } },
      { PAYPROVIDER_PRICE_PACK_TOKENS_1M: 'price_1m, price_1m_old', PAYPROVIDER_PRICE_PRO: 'price_pro' },
    );
    expect(config.providerPackPrices).toEqual({ tokens_1m: ['price_1m', 'price_1m_old'] });
    expect(config.providerPrices).toEqual({ pro: ['price_pro'] });
  });

  it('refuses a price listed for a tier and a pack, and a tier and a pack that would share one variable', () => {
    const packs = { credit_packs: { small: { metric: 'ai_tokens', amount: 1 } } };
    expect(() => load({ tiers: TIERS, ...packs }, { PAYPROVIDER_PRICE_PRO: 'price_x', PAYPROVIDER_PRICE_PACK_SMALL: 'price_x' })).toThrow(
      'PAYPROVIDER_PRICE_PACK_SMALL: price price_x is also listed for the tier pro',
    );
    // The tier "pack-small" reads PAYPROVIDER_PRICE_PACK_SMALL too: the start says so rather than sell one as the other.
    expect(() => load({ tiers: { ...TIERS, 'pack-small': TIERS.pro }, ...packs })).toThrow(
      'PAYPROVIDER_PRICE_PACK_SMALL: names both the tier pack-small and the credit pack small; rename one of them',
    );
  });
});
