import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { resolve } from 'node:path';
import { parseSigningKeys, SigningKey } from './entitlement-keys';
import { list } from './env-rules';
import { EnvDto } from './env.dto';
import { NamedKey, namedKeys } from './named-keys';
import { CreditPacks, loadTierTableFile } from './credit-packs';
import { DEFAULT_TIERS, METERED_METRICS, MeteredMetric, TierTable } from './tiers';

/**
 * The validated configuration, typed. It is also the DI token: inject `AppConfig` anywhere (the one way to
 * read configuration). Built once at start by `loadConfig` from the environment, as EnvDto declares it;
 * nothing else reads process.env.
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
  /**
   * A DATABASE_DIRECT_URL other than DATABASE_URL: `databaseUrl` is a pooler, which takes no startup
   * parameter and keeps no named statement (spec §1).
   */
  readonly databaseThroughPooler: boolean;
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
  /**
   * PAYPROVIDER_WEBHOOK_SECRET. Empty only outside production, until the start-up gives this machine its own
   * (`withMachineWebhookSecret`, webhook-secret.ts).
   */
  readonly webhookSecrets: string[];
  /** True when the secret was generated for this machine rather than configured. */
  readonly webhookSecretGenerated: boolean;
  readonly webhookToleranceS: number;
  readonly providerSecretKey?: string;
  /** Which payment provider runs: the real one (PAYPROVIDER_SECRET_KEY) or the built-in sandbox. */
  readonly provider: 'stripe' | 'sandbox';
  readonly providerApiUrl: URL;
  /** Per-attempt timeout of a call to the provider (the SDK retries twice), capped at 10 s. */
  readonly providerTimeoutMs: number;
  /**
   * The provider requests per second this instance makes at most (PAYPROVIDER_MAX_RPS), shared by priority
   * (provider/provider-budget.ts). Default half the provider's documented account limit: 50 with a live key
   * (limit 100/s), 12 with a test key (limit 25/s); the other half stays for the web app's own calls.
   */
  readonly providerMaxRps: number;
  /** Requests reaching the provider one user may make per minute (PAYPROVIDER_USER_MAX_PER_MINUTE). */
  readonly providerUserMaxPerMinute: number;
  /** Checkout (spec §11.3): TRIAL_REQUIRE_PAYMENT_METHOD, PAYPROVIDER_ALLOW_PROMOTION_CODES, PAYPROVIDER_AUTOMATIC_TAX. */
  readonly checkout: { trialRequiresPaymentMethod: boolean; allowPromotionCodes: boolean; automaticTax: boolean };
  /** Tier name → its provider price ids, from PAYPROVIDER_PRICE_<TIER> (comma-separated; the first is sold). */
  readonly providerPrices: Record<string, string[]>;
  /** Credit pack name → its one-time provider price ids, from PAYPROVIDER_PRICE_PACK_<PACK> (the first is sold). */
  readonly providerPackPrices: Record<string, string[]>;
  /** Metric → the provider's meter event name its accepted usage is reported under (PAYPROVIDER_METER_<METRIC>, spec §13). */
  readonly providerMeters: Partial<Record<MeteredMetric, string>>;
  /** METER_FLUSH_S: the length of a meter window, in seconds. */
  readonly meterFlushS: number;
  readonly appUrl: URL;
  /** Where a person's browser reaches this service (the sandbox's pages); unset: http://localhost:<port>. */
  readonly publicUrl?: URL;
  readonly tiers: TierTable;
  /** The credit packs TIERS_FILE sells (spec §16.3); none in the built-in table. */
  readonly creditPacks: CreditPacks;
  readonly sessionTtlS: number;
  /** SERVICE_API_KEYS: each key with its name (`name:key`; a bare key is `key<N>`, N its 1-based place), the actor of the audit log. */
  readonly serviceApiKeys: NamedKey[];
  readonly gracePeriodDays: number;
  readonly metricsToken?: string;
  /**
   * ENTITLEMENT_SIGNING_KEYS (spec §12): the first signs entitlement tokens, all are published in the JWKS.
   * Empty when unset: outside production the licensing module then uses this machine's generated key.
   */
  readonly entitlementSigningKeys: SigningKey[];
  /** The longest `ttl_s` an entitlement token may be asked for (ENTITLEMENT_TOKEN_MAX_TTL_S). */
  readonly entitlementTokenMaxTtlS: number;
  /** Run the provider reconciliation this often (one instance at a time); unset: only by CLI. */
  readonly providerSyncIntervalS?: number;
  /** The most provider requests per second one reconciliation run makes (PROVIDER_SYNC_MAX_RPS). */
  readonly providerSyncMaxRps: number;
  /** Where license and capacity changes are POSTed (NOTIFY_URLS, spec §10); empty: none are sent. */
  readonly notifyUrls: string[];
  /** USAGE_ALERT_THRESHOLDS, ascending: the percentages of an included limit that send `usage.threshold` (spec §16.4). */
  readonly usageAlertThresholds: number[];
  /** CREDITS_LOW_THRESHOLD_PCT: `credits.low` below this percentage of the included limit, where no automatic top-up sets the threshold. */
  readonly creditsLowThresholdPct: number;
  /** NOTIFY_SECRET (`whsec_<base64>`), which signs them; set whenever notifyUrls is not empty. Never logged. */
  readonly notifySecret?: string;
  /** The web app's own access tokens (AUTH_JWT_*, spec §3) are accepted beside sessions; unset: sessions only. */
  readonly authJwt?: AuthJwtConfig;
  /** The console's sign-in through the company's OpenID provider (CONSOLE_OIDC_*, spec §14); unset: one-time links only. */
  readonly consoleOidc?: ConsoleOidcConfig;
}

export interface ConsoleOidcConfig {
  /** CONSOLE_OIDC_ISSUER: discovery reads `<issuer>/.well-known/openid-configuration`. */
  issuer: URL;
  clientId: string;
  /** CONSOLE_OIDC_CLIENT_SECRET. Never logged. */
  clientSecret: string;
  /** CONSOLE_OIDC_ALLOWED_DOMAINS, lower-cased: an operator's verified email must be at one of them exactly. */
  allowedDomains: string[];
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

/**
 * Validates the environment against EnvDto and builds the AppConfig. Throws ConfigError naming the first bad
 * variable. Reads TIERS_FILE; writes nothing.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  const given = givenValues(env);
  const dto = validateEnv(given);
  const { tiers, creditPacks } = dto.TIERS_FILE
    ? wrap('TIERS_FILE', () => loadTierTableFile(dto.TIERS_FILE!))
    : { tiers: DEFAULT_TIERS, creditPacks: {} };
  const prices = providerPrices(given, tiers, creditPacks);
  const config: AppConfig = {
    nodeEnv: dto.NODE_ENV,
    port: dto.PORT,
    ...database(dto),
    databasePoolSize: dto.DATABASE_POOL_SIZE,
    migrationLockTimeoutS: dto.MIGRATION_LOCK_TIMEOUT_S,
    requestTimeoutS: dto.REQUEST_TIMEOUT_S,
    embeddedPostgresPort: dto.EMBEDDED_POSTGRES_PORT,
    dataDir: resolve(dto.DATA_DIR),
    logLevel: dto.LOG_LEVEL,
    webhookSecrets: dto.PAYPROVIDER_WEBHOOK_SECRET,
    webhookSecretGenerated: false,
    webhookToleranceS: dto.PAYPROVIDER_WEBHOOK_TOLERANCE_S,
    providerSecretKey: dto.PAYPROVIDER_SECRET_KEY,
    provider: dto.PAYPROVIDER_SECRET_KEY ? 'stripe' : 'sandbox',
    providerApiUrl: new URL(dto.PAYPROVIDER_API_URL),
    providerTimeoutMs: dto.PAYPROVIDER_TIMEOUT_MS,
    providerMaxRps: dto.PAYPROVIDER_MAX_RPS ?? (/^[sr]k_live_/.test(dto.PAYPROVIDER_SECRET_KEY ?? '') ? 50 : 12),
    providerUserMaxPerMinute: dto.PAYPROVIDER_USER_MAX_PER_MINUTE,
    checkout: {
      trialRequiresPaymentMethod: dto.TRIAL_REQUIRE_PAYMENT_METHOD,
      allowPromotionCodes: dto.PAYPROVIDER_ALLOW_PROMOTION_CODES,
      automaticTax: dto.PAYPROVIDER_AUTOMATIC_TAX,
    },
    providerPrices: prices.tiers,
    providerPackPrices: prices.packs,
    providerMeters: providerMeters(given, dto),
    meterFlushS: dto.METER_FLUSH_S,
    appUrl: new URL(dto.APP_URL),
    publicUrl: dto.PUBLIC_URL === undefined ? undefined : new URL(dto.PUBLIC_URL),
    tiers,
    creditPacks,
    sessionTtlS: dto.SESSION_TTL_S,
    serviceApiKeys: namedKeys(dto.SERVICE_API_KEYS),
    gracePeriodDays: dto.GRACE_PERIOD_DAYS,
    metricsToken: dto.METRICS_TOKEN,
    entitlementSigningKeys: dto.ENTITLEMENT_SIGNING_KEYS ? parseSigningKeys(dto.ENTITLEMENT_SIGNING_KEYS) : [],
    entitlementTokenMaxTtlS: dto.ENTITLEMENT_TOKEN_MAX_TTL_S,
    providerSyncIntervalS: dto.PROVIDER_SYNC_INTERVAL_S,
    providerSyncMaxRps: dto.PROVIDER_SYNC_MAX_RPS,
    notifyUrls: dto.NOTIFY_URLS.map((url) => new URL(url).toString()),
    notifySecret: dto.NOTIFY_SECRET,
    usageAlertThresholds: dto.USAGE_ALERT_THRESHOLDS.map(Number).sort((x, y) => x - y),
    creditsLowThresholdPct: dto.CREDITS_LOW_THRESHOLD_PCT,
    authJwt: dto.AUTH_JWT_JWKS_URL
      ? { jwksUrl: new URL(dto.AUTH_JWT_JWKS_URL), issuer: dto.AUTH_JWT_ISSUER, audience: dto.AUTH_JWT_AUDIENCE }
      : undefined,
    consoleOidc: dto.CONSOLE_OIDC_ISSUER
      ? {
          issuer: new URL(dto.CONSOLE_OIDC_ISSUER),
          clientId: dto.CONSOLE_OIDC_CLIENT_ID!,
          clientSecret: dto.CONSOLE_OIDC_CLIENT_SECRET!,
          allowedDomains: [...new Set(dto.CONSOLE_OIDC_ALLOWED_DOMAINS.map((d) => d.toLowerCase()))],
        }
      : undefined,
  };
  return Object.assign(new AppConfig(), config);
}

/** The variables that are set: trimmed, an empty value counting as unset (its default then applies). */
function givenValues(env: Env): Record<string, string> {
  return Object.fromEntries(Object.entries(env).flatMap(([name, value]) => (value?.trim() ? [[name, value.trim()]] : [])));
}

/** The environment as EnvDto, with its defaults; ConfigError with the message of the first rule broken. */
export function validateEnv(given: Record<string, string>): EnvDto {
  const dto = plainToInstance(EnvDto, given);
  const [error] = validateSync(dto, { whitelist: true, stopAtFirstError: true });
  if (error) throw new ConfigError(Object.values(error.constraints ?? {})[0] ?? `${error.property} is invalid`);
  return dto;
}

function wrap<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const message = (err as Error).message;
    throw new ConfigError(message.startsWith(name) ? message : `${name}: ${message}`);
  }
}

type DatabaseSettings = Pick<
  AppConfig,
  'databaseUrl' | 'databaseDirectUrl' | 'databaseThroughPooler' | 'databaseStatementTimeoutMs' | 'databaseQueryTimeoutMs' | 'databaseNamedStatements'
>;

/**
 * The database settings whose defaults depend on each other. A DATABASE_DIRECT_URL other than DATABASE_URL
 * says that DATABASE_URL goes through a pooler, so statements are unnamed unless DATABASE_NAMED_STATEMENTS=true
 * says the pooler keeps them (PgBouncer 1.21+ with max_prepared_statements). The client-side query timeout
 * stays above the server-side statement timeout (EnvDto's rule), so the server always gives up first.
 */
function database(dto: EnvDto): DatabaseSettings {
  const behindPooler = dto.DATABASE_DIRECT_URL !== undefined && dto.DATABASE_DIRECT_URL !== dto.DATABASE_URL;
  return {
    databaseUrl: dto.DATABASE_URL,
    databaseDirectUrl: dto.DATABASE_DIRECT_URL,
    databaseThroughPooler: behindPooler,
    databaseStatementTimeoutMs: dto.DATABASE_STATEMENT_TIMEOUT_MS,
    databaseQueryTimeoutMs: dto.DATABASE_QUERY_TIMEOUT_MS ?? dto.DATABASE_STATEMENT_TIMEOUT_MS + 1000,
    databaseNamedStatements: dto.DATABASE_NAMED_STATEMENTS ?? !behindPooler,
  };
}

/**
 * PAYPROVIDER_PRICE_<TIER> for each tier of the table and PAYPROVIDER_PRICE_PACK_<PACK> for each credit pack; a
 * price id may identify one tier or pack only, and one variable may name one of them only.
 */
function providerPrices(given: Record<string, string>, tiers: TierTable, packs: CreditPacks): { tiers: Record<string, string[]>; packs: Record<string, string[]> } {
  const prices = { tiers: {} as Record<string, string[]>, packs: {} as Record<string, string[]> };
  const seen = new Map<string, string>();
  const owners = new Map<string, string>();
  const read = (name: string, owner: string, into: Record<string, string[]>, key: string) => {
    if (owners.has(name)) throw new ConfigError(`${name}: names both the ${owners.get(name)} and the ${owner}; rename one of them`);
    owners.set(name, owner);
    const ids = list(given[name]);
    for (const id of ids) {
      if (seen.has(id)) throw new ConfigError(`${name}: price ${id} is also listed for the ${seen.get(id)}`);
      seen.set(id, owner);
    }
    if (ids.length) into[key] = ids;
  };
  for (const tier of Object.keys(tiers)) read(`PAYPROVIDER_PRICE_${tier.toUpperCase().replace(/-/g, '_')}`, `tier ${tier}`, prices.tiers, tier);
  for (const pack of Object.keys(packs)) read(`PAYPROVIDER_PRICE_PACK_${pack.toUpperCase()}`, `credit pack ${pack}`, prices.packs, pack);
  return prices;
}

/** PAYPROVIDER_METER_<METRIC> as EnvDto read them; a name for any other metric stops the start. */
function providerMeters(given: Record<string, string>, dto: EnvDto): Partial<Record<MeteredMetric, string>> {
  const variable = (metric: MeteredMetric) => `PAYPROVIDER_METER_${metric.toUpperCase() as Uppercase<MeteredMetric>}` as const;
  const known: string[] = METERED_METRICS.map(variable);
  const stray = Object.keys(given).find((name) => name.startsWith('PAYPROVIDER_METER_') && !known.includes(name));
  if (stray) throw new ConfigError(`${stray}: only projects and ai_tokens can be metered (${known.join(', ')})`);
  const meters: Partial<Record<MeteredMetric, string>> = {};
  for (const metric of METERED_METRICS) {
    const eventName = dto[variable(metric)];
    if (eventName !== undefined) meters[metric] = eventName;
  }
  return meters;
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
