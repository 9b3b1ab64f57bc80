import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_TIERS, TierTable, loadTiersFile } from './tiers';

/**
 * The validated configuration. It is also the DI token: inject `AppConfig` anywhere.
 * Built once at start by `loadConfig`; nothing else reads process.env.
 */
export class AppConfig {
  readonly nodeEnv: string;
  readonly port: number;
  /** Unset: the embedded PostgreSQL is used (see database/embedded-postgres.ts). */
  readonly databaseUrl?: string;
  readonly databasePoolSize: number;
  /** How long a query may take before it fails, so a stuck database answers 5xx instead of hanging. */
  readonly databaseQueryTimeoutMs: number;
  readonly embeddedPostgresPort: number;
  readonly dataDir: string;
  readonly logLevel: string;
  readonly webhookSecrets: string[];
  /** True when the secret was generated for this laptop rather than configured. */
  readonly webhookSecretGenerated: boolean;
  readonly webhookToleranceS: number;
  readonly providerSecretKey?: string;
  readonly providerApiUrl: URL;
  /** Per-attempt timeout of a call to the provider (the SDK retries twice), capped at 10 s. */
  readonly providerTimeoutMs: number;
  /** Tier name → provider price id, from PAYPROVIDER_PRICE_<TIER>. */
  readonly providerPrices: Record<string, string>;
  readonly appUrl: URL;
  /** Where a person's browser reaches this service (the sandbox's pages); unset: http://localhost:<port>. */
  readonly publicUrl?: URL;
  readonly tiers: TierTable;
  readonly sessionTtlS: number;
  readonly serviceApiKeys: string[];
  readonly gracePeriodDays: number;
  readonly metricsToken?: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** Validates the environment. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): AppConfig {
  const nodeEnv = env.NODE_ENV ?? 'development';
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  const tiers = env.TIERS_FILE ? wrap('TIERS_FILE', () => loadTiersFile(env.TIERS_FILE!)) : DEFAULT_TIERS;
  const secret = webhookSecrets(env, nodeEnv, dataDir);
  const config: AppConfig = {
    nodeEnv,
    port: int(env, 'PORT', 3000, 0, 65535),
    databaseUrl: databaseUrl(env),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseQueryTimeoutMs: int(env, 'DATABASE_QUERY_TIMEOUT_MS', 5000, 100, 600_000),
    embeddedPostgresPort: int(env, 'EMBEDDED_POSTGRES_PORT', 54329, 1, 65535),
    dataDir,
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    webhookSecrets: secret.secrets,
    webhookSecretGenerated: secret.generated,
    webhookToleranceS: int(env, 'PAYPROVIDER_WEBHOOK_TOLERANCE_S', 300, 1, 86_400),
    providerSecretKey: nonEmpty(env.PAYPROVIDER_SECRET_KEY),
    providerApiUrl: url(env, 'PAYPROVIDER_API_URL', 'https://api.stripe.com'),
    providerTimeoutMs: int(env, 'PAYPROVIDER_TIMEOUT_MS', 10_000, 50, 10_000),
    providerPrices: providerPrices(env, tiers),
    appUrl: origin(env, 'APP_URL', 'http://localhost:3000'),
    publicUrl: nonEmpty(env.PUBLIC_URL) === undefined ? undefined : origin(env, 'PUBLIC_URL', ''),
    tiers,
    sessionTtlS: int(env, 'SESSION_TTL_S', 2_592_000, 60, 31_536_000),
    serviceApiKeys: list(env.SERVICE_API_KEYS),
    gracePeriodDays: int(env, 'GRACE_PERIOD_DAYS', 7, 0, 365),
    metricsToken: nonEmpty(env.METRICS_TOKEN),
  };
  return Object.assign(new AppConfig(), config);
}

function wrap<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const message = (err as Error).message;
    throw new ConfigError(message.startsWith(name) ? message : `${name}: ${message}`);
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function oneOf(env: Env, name: string, allowed: string[], fallback: string): string {
  const raw = nonEmpty(env[name]) ?? fallback;
  if (!allowed.includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw;
}

function url(env: Env, name: string, fallback: string): URL {
  const raw = nonEmpty(env[name]) ?? fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  return parsed;
}

function origin(env: Env, name: string, fallback: string): URL {
  const parsed = url(env, name, fallback);
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username) {
    throw new ConfigError(`${name} must be an origin such as https://app.example.com (no path, query or credentials)`);
  }
  return parsed;
}

function databaseUrl(env: Env): string | undefined {
  const raw = nonEmpty(env.DATABASE_URL);
  if (raw === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !['postgres:', 'postgresql:'].includes(parsed.protocol)) {
    // Never echo the value: it may hold a password.
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  return raw;
}

function providerPrices(env: Env, tiers: TierTable): Record<string, string> {
  const prices: Record<string, string> = {};
  for (const tier of Object.keys(tiers)) {
    const price = nonEmpty(env[`PAYPROVIDER_PRICE_${tier.toUpperCase().replace(/-/g, '_')}`]);
    if (price) prices[tier] = price;
  }
  return prices;
}

function webhookSecrets(env: Env, nodeEnv: string, dataDir: string): { secrets: string[]; generated: boolean } {
  const configured = list(env.PAYPROVIDER_WEBHOOK_SECRET);
  if (configured.length) return { secrets: configured, generated: false };
  if (nodeEnv === 'production') {
    throw new ConfigError('PAYPROVIDER_WEBHOOK_SECRET is required when NODE_ENV=production');
  }
  // A laptop gets one random secret, kept so that it survives restarts.
  const file = join(dataDir, 'webhook-secret');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `whsec_${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  return { secrets: [readFileSync(file, 'utf8').trim()], generated: true };
}
