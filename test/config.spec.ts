import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';
import { DEFAULT_TIERS, limitsOf } from '../src/config/tiers';
import { withMachineWebhookSecret } from '../src/config/webhook-secret';

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
    expect(config.providerMeters).toEqual({});
    expect(config.meterFlushS).toBe(60);
    expect(config.usageAlertThresholds).toEqual([80, 100]);
    expect(config.creditsLowThresholdPct).toBe(10);
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
    expect(config.serviceApiKeys).toEqual([{ name: 'key1', key: 'k1' }, { name: 'key2', key: 'k2' }]);
    expect(config.providerPrices).toEqual({ pro: ['price_pro'], team: ['price_team_monthly', 'price_team_yearly'] });
  });

  it('names service keys: name:key, a bare key is key<N> by its place in the whole list, a key with a colon after a name keeps it', () => {
    const config = loadConfig({ ...base(), SERVICE_API_KEYS: 'webapp:s3cret, bare, ops:a:b' });
    expect(config.serviceApiKeys).toEqual([
      { name: 'webapp', key: 's3cret' },
      { name: 'key2', key: 'bare' },
      { name: 'ops', key: 'a:b' },
    ]);
  });

  it('reads every variable it declares (none is dropped between the schema and AppConfig)', () => {
    const dir = dataDir();
    const config = loadConfig({
      NODE_ENV: 'staging',
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      PORT: '8080',
      DATABASE_URL: 'postgres://app@pooler:6432/billing',
      DATABASE_DIRECT_URL: 'postgres://app@db:5432/billing',
      DATABASE_POOL_SIZE: '7',
      DATABASE_STATEMENT_TIMEOUT_MS: '2000',
      DATABASE_QUERY_TIMEOUT_MS: '2500',
      DATABASE_NAMED_STATEMENTS: 'true',
      MIGRATION_LOCK_TIMEOUT_S: '60',
      REQUEST_TIMEOUT_S: '15',
      EMBEDDED_POSTGRES_PORT: '5555',
      PAYPROVIDER_WEBHOOK_SECRET: ' whsec_a ',
      PAYPROVIDER_WEBHOOK_TOLERANCE_S: '100',
      PAYPROVIDER_SANDBOX: 'true',
      PAYPROVIDER_SECRET_KEY: 'sk_test_x',
      PAYPROVIDER_API_URL: 'http://127.0.0.1:12111',
      PAYPROVIDER_TIMEOUT_MS: '500',
      PAYPROVIDER_MAX_RPS: '20',
      PAYPROVIDER_USER_MAX_PER_MINUTE: '5',
      TRIAL_REQUIRE_PAYMENT_METHOD: 'false',
      PAYPROVIDER_ALLOW_PROMOTION_CODES: 'true',
      PAYPROVIDER_AUTOMATIC_TAX: 'true',
      PAYPROVIDER_METER_AI_TOKENS: 'ai_tokens_used',
      PAYPROVIDER_METER_PROJECTS: 'projects_created',
      METER_FLUSH_S: '30',
      APP_URL: 'https://app.example.com',
      PUBLIC_URL: 'https://billing.example.com',
      SESSION_TTL_S: '3600',
      SERVICE_API_KEYS: 'k1',
      GRACE_PERIOD_DAYS: '3',
      METRICS_TOKEN: 'm',
      ENTITLEMENT_SIGNING_KEYS: JSON.stringify({ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'k-2026' }),
      ENTITLEMENT_TOKEN_MAX_TTL_S: '86400',
      PROVIDER_SYNC_INTERVAL_S: '600',
      PROVIDER_SYNC_MAX_RPS: '10',
      NOTIFY_URLS: 'https://app.example.com/hooks',
      NOTIFY_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
      USAGE_ALERT_THRESHOLDS: '150, 50,90',
      CREDITS_LOW_THRESHOLD_PCT: '25',
      AUTH_JWT_JWKS_URL: 'https://app.example.com/jwks',
      AUTH_JWT_ISSUER: 'iss',
      AUTH_JWT_AUDIENCE: 'aud',
    });
    expect(config).toEqual(
      Object.assign(Object.create(Object.getPrototypeOf(config)), {
        nodeEnv: 'staging',
        dataDir: dir,
        logLevel: 'warn',
        port: 8080,
        databaseUrl: 'postgres://app@pooler:6432/billing',
        databaseDirectUrl: 'postgres://app@db:5432/billing',
        databaseThroughPooler: true,
        databasePoolSize: 7,
        databaseStatementTimeoutMs: 2000,
        databaseQueryTimeoutMs: 2500,
        databaseNamedStatements: true,
        migrationLockTimeoutS: 60,
        requestTimeoutS: 15,
        embeddedPostgresPort: 5555,
        webhookSecrets: ['whsec_a'],
        webhookSecretGenerated: false,
        webhookToleranceS: 100,
        provider: 'stripe',
        providerSecretKey: 'sk_test_x',
        providerApiUrl: new URL('http://127.0.0.1:12111'),
        providerTimeoutMs: 500,
        providerMaxRps: 20,
        providerUserMaxPerMinute: 5,
        checkout: { trialRequiresPaymentMethod: false, allowPromotionCodes: true, automaticTax: true },
        providerPrices: {},
        providerPackPrices: {},
        providerMeters: { ai_tokens: 'ai_tokens_used', projects: 'projects_created' },
        meterFlushS: 30,
        appUrl: new URL('https://app.example.com'),
        publicUrl: new URL('https://billing.example.com'),
        tiers: DEFAULT_TIERS,
        creditPacks: {},
        sessionTtlS: 3600,
        serviceApiKeys: [{ name: 'key1', key: 'k1' }],
        gracePeriodDays: 3,
        metricsToken: 'm',
        entitlementSigningKeys: [{ kid: 'k-2026', alg: 'EdDSA', privateKey: expect.any(KeyObject) }],
        entitlementTokenMaxTtlS: 86_400,
        providerSyncIntervalS: 600,
        providerSyncMaxRps: 10,
        notifyUrls: ['https://app.example.com/hooks'],
        notifySecret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        usageAlertThresholds: [50, 90, 150],
        creditsLowThresholdPct: 25,
        authJwt: { jwksUrl: new URL('https://app.example.com/jwks'), issuer: 'iss', audience: 'aud' },
      }),
    );
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
    ['METER_FLUSH_S', '0'],
    ['PAYPROVIDER_METER_AI_TOKENS', 'x'.repeat(101)],
    ['PAYPROVIDER_METER_AI_TOKENS', 'ai tokens'],
    ['PAYPROVIDER_METER_USERS', 'users'],
    ['PAYPROVIDER_METER_TOKENS', 'ai_tokens'],
    ['USAGE_ALERT_THRESHOLDS', '80,0'],
    ['USAGE_ALERT_THRESHOLDS', '1001'],
    ['USAGE_ALERT_THRESHOLDS', '80,80'],
    ['USAGE_ALERT_THRESHOLDS', '80.5'],
    ['USAGE_ALERT_THRESHOLDS', '-5'],
    ['USAGE_ALERT_THRESHOLDS', 'eighty'],
    ['CREDITS_LOW_THRESHOLD_PCT', '101'],
    ['CREDITS_LOW_THRESHOLD_PCT', '5%'],
  ])('stops on a bad %s with a message naming it', (name, value) => {
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(name);
  });

  it("PAYPROVIDER_MAX_RPS defaults to half the provider's documented limit: 50 with a live key, 12 with a test key", () => {
    expect(loadConfig({ ...base(), PAYPROVIDER_SECRET_KEY: 'sk_live_x' }).providerMaxRps).toBe(50);
    expect(loadConfig({ ...base(), PAYPROVIDER_SECRET_KEY: 'rk_live_x' }).providerMaxRps).toBe(50);
    expect(loadConfig({ ...base(), PAYPROVIDER_SECRET_KEY: 'sk_test_x' }).providerMaxRps).toBe(12);
    expect(loadConfig({ ...base(), PAYPROVIDER_SECRET_KEY: 'sk_live_x', PAYPROVIDER_MAX_RPS: '80' }).providerMaxRps).toBe(80);
    expect(() => loadConfig({ ...base(), PAYPROVIDER_MAX_RPS: '0' })).toThrow('PAYPROVIDER_MAX_RPS');
    expect(loadConfig(base()).providerUserMaxPerMinute).toBe(30);
  });

  it('never echoes a bad DATABASE_URL, which may hold a password', () => {
    expect(() => loadConfig({ ...base(), DATABASE_URL: 'mysql://u:hunter2@x' })).toThrow(/^(?!.*hunter2)/);
  });

  /** What production needs besides what a test names: a database and a secret of production strength. */
  const productionBase = () => ({
    ...base(),
    NODE_ENV: 'production',
    DATABASE_URL: 'postgres://app@db:5432/billing',
    PAYPROVIDER_WEBHOOK_SECRET: 'whsec_0123456789abcdef',
  });

  it('refuses the sandbox in production unless PAYPROVIDER_SANDBOX=true says so', () => {
    const production = productionBase();
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
    expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), DATABASE_URL: 'postgres://app@db:5432/billing' })).toThrow(
      /PAYPROVIDER_WEBHOOK_SECRET is required/,
    );
  });

  it('in production refuses a webhook secret or a service key under 16 characters, naming neither', () => {
    const production = { ...productionBase(), PAYPROVIDER_SANDBOX: 'true' };
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig({ ...production, ...env });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('the configuration was accepted');
    };
    expect(refusal({ PAYPROVIDER_WEBHOOK_SECRET: 'x' })).toBe(
      "PAYPROVIDER_WEBHOOK_SECRET: secret 1 has fewer than 16 characters; in production every secret needs at least 16 (the provider's whsec_… secret)",
    );
    expect(refusal({ PAYPROVIDER_WEBHOOK_SECRET: 'whsec_0123456789abcdef, whsec_short' })).toMatch(/^PAYPROVIDER_WEBHOOK_SECRET: secret 2 has fewer/);
    expect(refusal({ SERVICE_API_KEYS: 'a' })).toBe(
      'SERVICE_API_KEYS: the key named "key1" has fewer than 16 characters; in production every key needs at least 16 (e.g. openssl rand -hex 24)',
    );
    // The name counts for nothing: a 16-character name with a short key is a short key.
    const named = refusal({ SERVICE_API_KEYS: '0123456789abcdef0,webapp-with-a-long-name:s3cret' });
    expect(named).toMatch(/^SERVICE_API_KEYS: the key named "webapp-with-a-long-name" has fewer than 16/);
    expect(named).not.toContain('s3cret');
    const accepted = loadConfig({ ...production, SERVICE_API_KEYS: 'webapp:0123456789abcdef', PAYPROVIDER_WEBHOOK_SECRET: 'whsec_0123456789' });
    expect(accepted.serviceApiKeys).toEqual([{ name: 'webapp', key: '0123456789abcdef' }]);
    // Outside production a short key or secret is a developer's own business.
    expect(loadConfig({ ...base(), SERVICE_API_KEYS: 'a', PAYPROVIDER_WEBHOOK_SECRET: 'x' }).serviceApiKeys).toEqual([{ name: 'key1', key: 'a' }]);
  });

  it('in production refuses to start without DATABASE_URL (never the embedded PostgreSQL), before anything else', () => {
    const { DATABASE_URL: _, ...production } = { ...productionBase(), PAYPROVIDER_SANDBOX: 'true' };
    expect(() => loadConfig(production)).toThrow(
      new ConfigError('DATABASE_URL is required when NODE_ENV=production (the embedded PostgreSQL is for development and tests, never for production data)'),
    );
    expect(loadConfig({ ...base() }).databaseUrl).toBeUndefined();
  });

  it('generates a laptop secret once and keeps it, at start-up: loading the configuration writes nothing', () => {
    const dir = dataDir();
    const loaded = loadConfig({ DATA_DIR: dir });
    expect(loaded.webhookSecrets).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    const first = withMachineWebhookSecret(loaded);
    expect(first.config.webhookSecretGenerated).toBe(true);
    expect(first.config.webhookSecrets[0]).toMatch(/^whsec_[0-9a-f]{48}$/);
    expect(readFileSync(join(dir, 'webhook-secret'), 'utf8').trim()).toBe(first.config.webhookSecrets[0]);
    expect(statSync(join(dir, 'webhook-secret')).mode & 0o777).toBe(0o600);
    expect(first.created).toBe(true);
    const second = withMachineWebhookSecret(loadConfig({ DATA_DIR: dir }));
    expect(second.config.webhookSecrets).toEqual(first.config.webhookSecrets);
    // Shown on the start that generated it, not on every start after.
    expect(second.created).toBe(false);
    // A configured secret is used as it is, and nothing is written.
    const configuredDir = dataDir();
    const configured = withMachineWebhookSecret(loadConfig({ DATA_DIR: configuredDir, PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' }));
    expect(configured).toMatchObject({ created: false, config: { webhookSecrets: ['whsec_x'], webhookSecretGenerated: false } });
    expect(readdirSync(configuredDir)).toEqual([]);
  });

  it('loads a TIERS_FILE', () => {
    const file = join(dataDir(), 'tiers.json');
    writeFileSync(file, JSON.stringify({ free: { projects: 1, ai_tokens: 2, users: 3 }, gold: { projects: 9, ai_tokens: 9, users: 9 } }));
    const tiers = loadConfig({ ...base(), TIERS_FILE: file }).tiers;
    expect(Object.keys(tiers)).toEqual(['free', 'gold']);
    expect(limitsOf(tiers.gold)).toEqual({ projects: 9, ai_tokens: 9, users: 9 });
  });
});
