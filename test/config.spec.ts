import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';

const dataDir = () => mkdtempSync(join(tmpdir(), 'billing-config-'));
const base = () => ({ DATA_DIR: dataDir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' });

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(base());
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.webhookToleranceS).toBe(300);
    expect(config.providerApiUrl.toString()).toBe('https://api.stripe.com/');
    expect(config.appUrl.origin).toBe('http://localhost:3000');
    expect(config.sessionTtlS).toBe(2_592_000);
    expect(config.serviceApiKeys).toEqual([]);
    expect(config.gracePeriodDays).toBe(7);
    expect(Object.keys(config.tiers)).toEqual(['free', 'pro', 'team', 'enterprise']);
  });

  it('reads lists, prices per tier and the rotation secrets', () => {
    const config = loadConfig({
      ...base(),
      PAYPROVIDER_WEBHOOK_SECRET: 'whsec_new, whsec_old',
      SERVICE_API_KEYS: 'k1,k2',
      PAYPROVIDER_PRICE_PRO: 'price_pro',
      PAYPROVIDER_PRICE_TEAM: 'price_team_monthly, price_team_yearly',
    });
    expect(config.webhookSecrets).toEqual(['whsec_new', 'whsec_old']);
    expect(config.serviceApiKeys).toEqual(['k1', 'k2']);
    expect(config.providerPrices).toEqual({ pro: ['price_pro'], team: ['price_team_monthly', 'price_team_yearly'] });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['PAYPROVIDER_WEBHOOK_TOLERANCE_S', '-1'],
    ['PAYPROVIDER_API_URL', 'not a url'],
    ['APP_URL', 'https://app.example.com/path'],
    ['SESSION_TTL_S', '1.5'],
    ['GRACE_PERIOD_DAYS', 'seven'],
    ['TIERS_FILE', '/does/not/exist.json'],
  ])('stops on a bad %s with a message naming it', (name, value) => {
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(name);
  });

  it('never echoes a bad DATABASE_URL, which may hold a password', () => {
    expect(() => loadConfig({ ...base(), DATABASE_URL: 'mysql://u:hunter2@x' })).toThrow(/^(?!.*hunter2)/);
  });

  it('refuses the sandbox in production unless PAYPROVIDER_SANDBOX=true says so', () => {
    const production = { ...base(), NODE_ENV: 'production' };
    expect(() => loadConfig(production)).toThrow(/PAYPROVIDER_SECRET_KEY is required when NODE_ENV=production/);
    expect(() => loadConfig({ ...production, PAYPROVIDER_SANDBOX: 'yes' })).toThrow(/PAYPROVIDER_SANDBOX/);
    expect(loadConfig({ ...production, PAYPROVIDER_SANDBOX: 'true' }).provider).toBe('sandbox');
    expect(loadConfig({ ...production, PAYPROVIDER_SECRET_KEY: 'sk_live_x' }).provider).toBe('stripe');
    // Outside production the sandbox is the default.
    expect(loadConfig(base()).provider).toBe('sandbox');
  });

  it('refuses a price id listed for two tiers', () => {
    expect(() => loadConfig({ ...base(), PAYPROVIDER_PRICE_PRO: 'price_a', PAYPROVIDER_PRICE_TEAM: 'price_b,price_a' })).toThrow(
      /PAYPROVIDER_PRICE_TEAM: price price_a is also listed for the tier pro/,
    );
  });

  it('requires the webhook secret in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir() })).toThrow(/PAYPROVIDER_WEBHOOK_SECRET/);
  });

  it('generates a laptop secret once and keeps it', () => {
    const dir = dataDir();
    const first = loadConfig({ DATA_DIR: dir });
    expect(first.webhookSecretGenerated).toBe(true);
    expect(first.webhookSecrets[0]).toMatch(/^whsec_[0-9a-f]{48}$/);
    expect(readFileSync(join(dir, 'webhook-secret'), 'utf8').trim()).toBe(first.webhookSecrets[0]);
    expect(first.webhookSecretCreated).toBe(true);
    const second = loadConfig({ DATA_DIR: dir });
    expect(second.webhookSecrets).toEqual(first.webhookSecrets);
    // Shown on the start that generated it, not on every start after.
    expect(second.webhookSecretCreated).toBe(false);
  });

  it('loads a TIERS_FILE', () => {
    const file = join(dataDir(), 'tiers.json');
    writeFileSync(file, JSON.stringify({ free: { projects: 1, ai_tokens: 2, users: 3 }, gold: { projects: 9, ai_tokens: 9, users: 9 } }));
    expect(loadConfig({ ...base(), TIERS_FILE: file }).tiers).toEqual({
      free: { projects: 1, ai_tokens: 2, users: 3 },
      gold: { projects: 9, ai_tokens: 9, users: 9 },
    });
  });
});
