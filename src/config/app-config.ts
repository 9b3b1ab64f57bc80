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
  /**
   * PostgreSQL itself, for migrations and anything that needs a session (DATABASE_DIRECT_URL) when
   * `databaseUrl` goes through a pooler. Unset: `databaseUrl`.
   */
  readonly databaseDirectUrl?: string;
  readonly databasePoolSize: number;
  /** Server side: the longest any statement may run; it is then cancelled and its transaction rolled back. */
  readonly databaseStatementTimeoutMs: number;
  /** Client side: a backstop above the statement timeout, for a database that does not answer at all. */
  readonly databaseQueryTimeoutMs: number;
  /** Named prepared statements (planned once per connection); off behind a pooler in transaction mode. */
  readonly databaseNamedStatements: boolean;
  /** How long a start waits for another instance's migrations. */
  readonly migrationLockTimeoutS: number;
  /** A request whose headers and body have not arrived after this long is answered 408 and its socket closed. */
  readonly requestTimeoutS: number;
  /** EMBEDDED_POSTGRES_PORT; unset: the port recorded in DATA_DIR by the last start, else 54329. */
  readonly embeddedPostgresPort?: number;
  readonly dataDir: string;
  readonly logLevel: string;
  readonly webhookSecrets: string[];
  /** True when the secret was generated for this laptop rather than configured. */
  readonly webhookSecretGenerated: boolean;
  /** True only when this very load generated it (the first start on this machine): then it is shown once. */
  readonly webhookSecretCreated: boolean;
  readonly webhookToleranceS: number;
  readonly providerSecretKey?: string;
  /** Which payment provider runs: the real one (PAYPROVIDER_SECRET_KEY) or the built-in sandbox. */
  readonly provider: 'stripe' | 'sandbox';
  readonly providerApiUrl: URL;
  /** Per-attempt timeout of a call to the provider (the SDK retries twice), capped at 10 s. */
  readonly providerTimeoutMs: number;
  /** Tier name → its provider price ids, from PAYPROVIDER_PRICE_<TIER> (comma-separated; the first is sold). */
  readonly providerPrices: Record<string, string[]>;
  readonly appUrl: URL;
  /** Where a person's browser reaches this service (the sandbox's pages); unset: http://localhost:<port>. */
  readonly publicUrl?: URL;
  readonly tiers: TierTable;
  readonly sessionTtlS: number;
  readonly serviceApiKeys: string[];
  readonly gracePeriodDays: number;
  readonly metricsToken?: string;
  /** Run the provider reconciliation this often (one instance at a time); unset: only by CLI. */
  readonly providerSyncIntervalS?: number;
  /** Where license and capacity changes are POSTed (NOTIFY_URLS, SPEC 10); empty: none are sent. */
  readonly notifyUrls: string[];
  /** NOTIFY_SECRET (`whsec_<base64>`), which signs them; set whenever notifyUrls is not empty. Never logged. */
  readonly notifySecret?: string;
  /** The web app's own access tokens (AUTH_JWT_*, SPEC 3) are accepted beside sessions; unset: sessions only. */
  readonly authJwt?: AuthJwtConfig;
}

export interface AuthJwtConfig {
  /** AUTH_JWT_JWKS_URL: the public keys that sign the tokens. */
  jwksUrl: URL;
  /** AUTH_JWT_ISSUER: the `iss` a token must carry; unset: not checked. */
  issuer?: string;
  /** AUTH_JWT_AUDIENCE: the `aud` a token must carry (or list); unset: not checked. */
  audience?: string;
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
    ...database(env),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    migrationLockTimeoutS: int(env, 'MIGRATION_LOCK_TIMEOUT_S', 300, 1, 86_400),
    requestTimeoutS: int(env, 'REQUEST_TIMEOUT_S', 30, 1, 3600),
    embeddedPostgresPort: nonEmpty(env.EMBEDDED_POSTGRES_PORT) === undefined ? undefined : int(env, 'EMBEDDED_POSTGRES_PORT', 0, 1, 65535),
    dataDir,
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    webhookSecrets: secret.secrets,
    webhookSecretGenerated: secret.generated,
    webhookSecretCreated: secret.created,
    webhookToleranceS: int(env, 'PAYPROVIDER_WEBHOOK_TOLERANCE_S', 300, 1, 86_400),
    providerSecretKey: nonEmpty(env.PAYPROVIDER_SECRET_KEY),
    provider: provider(env, nodeEnv),
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
    providerSyncIntervalS: nonEmpty(env.PROVIDER_SYNC_INTERVAL_S) === undefined ? undefined : int(env, 'PROVIDER_SYNC_INTERVAL_S', 0, 10, 86_400),
    ...notifications(env),
    authJwt: authJwt(env),
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

type DatabaseSettings = Pick<
  AppConfig,
  'databaseUrl' | 'databaseDirectUrl' | 'databaseStatementTimeoutMs' | 'databaseQueryTimeoutMs' | 'databaseNamedStatements'
>;

/**
 * The database URLs and timeouts. A DATABASE_DIRECT_URL other than DATABASE_URL says that DATABASE_URL
 * goes through a pooler, so statements are unnamed unless DATABASE_NAMED_STATEMENTS=true says the pooler
 * keeps them (PgBouncer 1.21+ with max_prepared_statements). The client-side query timeout must stay
 * above the server-side statement timeout: the server then always gives up first and rolls back, so a
 * failed request has changed nothing.
 */
function database(env: Env): DatabaseSettings {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const databaseDirectUrl = postgresUrl(env, 'DATABASE_DIRECT_URL');
  if (databaseDirectUrl && !databaseUrl) {
    throw new ConfigError('DATABASE_DIRECT_URL needs DATABASE_URL (without it the embedded PostgreSQL is used)');
  }
  const behindPooler = databaseDirectUrl !== undefined && databaseDirectUrl !== databaseUrl;
  const statementTimeoutMs = int(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 5000, 100, 600_000);
  const queryTimeoutMs = int(env, 'DATABASE_QUERY_TIMEOUT_MS', statementTimeoutMs + 1000, 100, 660_000);
  if (queryTimeoutMs <= statementTimeoutMs) {
    throw new ConfigError(
      `DATABASE_QUERY_TIMEOUT_MS (${queryTimeoutMs}) must be above DATABASE_STATEMENT_TIMEOUT_MS (${statementTimeoutMs}), ` +
        'so that the database gives up (and rolls back) before the service does',
    );
  }
  return {
    databaseUrl,
    databaseDirectUrl,
    databaseStatementTimeoutMs: statementTimeoutMs,
    databaseQueryTimeoutMs: queryTimeoutMs,
    databaseNamedStatements: oneOf(env, 'DATABASE_NAMED_STATEMENTS', ['true', 'false'], behindPooler ? 'false' : 'true') === 'true',
  };
}

function postgresUrl(env: Env, name: string): string | undefined {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !['postgres:', 'postgresql:'].includes(parsed.protocol)) {
    // Never echo the value: it may hold a password.
    throw new ConfigError(`${name} must be a postgres:// or postgresql:// URL`);
  }
  return raw;
}

function providerPrices(env: Env, tiers: TierTable): Record<string, string[]> {
  const prices: Record<string, string[]> = {};
  const seen = new Map<string, string>();
  for (const tier of Object.keys(tiers)) {
    const name = `PAYPROVIDER_PRICE_${tier.toUpperCase().replace(/-/g, '_')}`;
    const ids = list(env[name]);
    for (const id of ids) {
      if (seen.has(id)) throw new ConfigError(`${name}: price ${id} is also listed for the tier ${seen.get(id)}`);
      seen.set(id, tier);
    }
    if (ids.length) prices[tier] = ids;
  }
  return prices;
}

/**
 * Without PAYPROVIDER_SECRET_KEY the built-in sandbox runs, whose checkout lets anyone "pay". In
 * production that gives paid tiers away, so it needs PAYPROVIDER_SANDBOX=true, said on purpose.
 */
function provider(env: Env, nodeEnv: string): 'stripe' | 'sandbox' {
  const sandboxAllowed = oneOf(env, 'PAYPROVIDER_SANDBOX', ['true', 'false'], 'false') === 'true';
  if (nonEmpty(env.PAYPROVIDER_SECRET_KEY)) return 'stripe';
  if (nodeEnv === 'production' && !sandboxAllowed) {
    throw new ConfigError(
      'PAYPROVIDER_SECRET_KEY is required when NODE_ENV=production (without it the sandbox provider would run and ' +
        'give paid tiers away); set PAYPROVIDER_SANDBOX=true only for a demo install',
    );
  }
  return 'sandbox';
}

/**
 * NOTIFY_URLS (comma-separated http(s) URLs; plain http and loopback are accepted, like a JWKS URL) and
 * NOTIFY_SECRET, a Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes. Neither
 * value is echoed in an error: a URL may carry a token.
 */
function notifications(env: Env): Pick<AppConfig, 'notifyUrls' | 'notifySecret'> {
  const notifyUrls = list(env.NOTIFY_URLS).map((raw, i) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(raw);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol)) {
      throw new ConfigError(`NOTIFY_URLS: entry ${i + 1} must be an absolute http(s) URL`);
    }
    return parsed.toString();
  });
  if (new Set(notifyUrls).size !== notifyUrls.length) throw new ConfigError('NOTIFY_URLS lists the same URL twice');
  const notifySecret = nonEmpty(env.NOTIFY_SECRET);
  if (notifySecret !== undefined) {
    const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(notifySecret)?.[1];
    const bytes = key && key.length % 4 === 0 ? Buffer.from(key, 'base64').length : 0;
    if (bytes < 24 || bytes > 64) {
      throw new ConfigError('NOTIFY_SECRET must be "whsec_" followed by the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))');
    }
  } else if (notifyUrls.length) {
    throw new ConfigError('NOTIFY_SECRET is required when NOTIFY_URLS is set (it signs the notifications)');
  }
  return { notifyUrls, notifySecret };
}

/**
 * AUTH_JWT_JWKS_URL (an http(s) URL, not echoed: it may carry a token) turns JWTs on; AUTH_JWT_ISSUER and
 * AUTH_JWT_AUDIENCE only narrow what it accepts, so either one without it is a mistake that would silently
 * accept nothing: the start stops.
 */
function authJwt(env: Env): AuthJwtConfig | undefined {
  const raw = nonEmpty(env.AUTH_JWT_JWKS_URL);
  const issuer = nonEmpty(env.AUTH_JWT_ISSUER);
  const audience = nonEmpty(env.AUTH_JWT_AUDIENCE);
  if (raw === undefined) {
    const orphan = issuer !== undefined ? 'AUTH_JWT_ISSUER' : audience !== undefined ? 'AUTH_JWT_AUDIENCE' : undefined;
    if (orphan) throw new ConfigError(`${orphan} is set but AUTH_JWT_JWKS_URL is not: without a JWKS no JWT is accepted`);
    return undefined;
  }
  let jwksUrl: URL | undefined;
  try {
    jwksUrl = new URL(raw);
  } catch {
    jwksUrl = undefined;
  }
  if (!jwksUrl || !['http:', 'https:'].includes(jwksUrl.protocol)) {
    throw new ConfigError('AUTH_JWT_JWKS_URL must be an absolute http(s) URL');
  }
  return { jwksUrl, issuer, audience };
}

/**
 * What the start should warn about in AUTH_JWT_JWKS_URL: in production the keys that decide who a caller
 * is should come over https from another host. Accepted anyway (a sidecar, a private network), but said.
 */
export function authJwtWarning(config: Pick<AppConfig, 'nodeEnv' | 'authJwt'>): string | undefined {
  const url = config.authJwt?.jwksUrl;
  if (!url || config.nodeEnv !== 'production') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '::1';
  if (url.protocol === 'http:' || loopback) {
    return `AUTH_JWT_JWKS_URL is ${url.protocol === 'http:' ? 'plain http' : 'a loopback address'} in production: the keys that decide who a caller is should come over https`;
  }
  return undefined;
}

function webhookSecrets(env: Env, nodeEnv: string, dataDir: string): { secrets: string[]; generated: boolean; created: boolean } {
  const configured = list(env.PAYPROVIDER_WEBHOOK_SECRET);
  if (configured.length) return { secrets: configured, generated: false, created: false };
  if (nodeEnv === 'production') {
    throw new ConfigError('PAYPROVIDER_WEBHOOK_SECRET is required when NODE_ENV=production');
  }
  // A laptop gets one random secret, kept so that it survives restarts.
  const file = join(dataDir, 'webhook-secret');
  const created = !existsSync(file);
  if (created) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `whsec_${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  return { secrets: [readFileSync(file, 'utf8').trim()], generated: true, created };
}
