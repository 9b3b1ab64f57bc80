import { Allow } from 'class-validator';
import { parseSigningKeys } from './entitlement-keys';
import { Bool, HttpUrl, Int, isHttpUrl, List, OneOf, Origin, PostgresUrl, Rule } from './env-rules';
import { namedKeys } from './named-keys';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** In production a key or secret shorter than this is refused: `a` or `x` is guessed, not configured. */
export const MIN_SECRET_LENGTH = 16;
const production = (env: EnvDto) => env.NODE_ENV === 'production';

/**
 * Every environment variable the service reads (spec §2), with its rule and its default: the one description
 * of the configuration. `loadConfig` (app-config.ts) validates the environment against it and builds the
 * typed `AppConfig` the code injects. A default that depends on another variable is resolved there.
 *
 * Order matters: the first variable that breaks a rule stops the start, and a rule that reads another
 * variable comes after it. `PAYPROVIDER_PRICE_<TIER>` are not here: which exist depends on the tier table.
 * `PAYPROVIDER_METER_<METRIC>` are, one per metric that back-ends report (METERED_METRICS); loadConfig refuses
 * any other.
 */
export class EnvDto {
  /**
   * `production` makes DATABASE_URL, the webhook secret and the provider key (or PAYPROVIDER_SANDBOX=true)
   * mandatory, and refuses keys and secrets shorter than MIN_SECRET_LENGTH.
   */
  @Allow()
  NODE_ENV: string = 'development';

  @Allow()
  DATA_DIR: string = '.data';

  @OneOf(LOG_LEVELS)
  LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

  @Int(0, 65535)
  PORT: number = 3000;

  /** Unset: the embedded PostgreSQL, which production never uses (even where the package is installed). */
  @Rule(
    'DATABASE_URL is required when NODE_ENV=production (the embedded PostgreSQL is for development and tests, never for production data)',
    (v, env) => v !== undefined || !production(env),
  )
  @PostgresUrl()
  DATABASE_URL?: string;

  @Rule('DATABASE_DIRECT_URL needs DATABASE_URL (without it the embedded PostgreSQL is used)', (v, env) => v === undefined || env.DATABASE_URL !== undefined)
  @PostgresUrl()
  DATABASE_DIRECT_URL?: string;

  @Int(1, 1000)
  DATABASE_POOL_SIZE: number = 10;

  @Int(100, 600_000)
  DATABASE_STATEMENT_TIMEOUT_MS: number = 5000;

  // Above the statement timeout, so that the database always gives up (and rolls back) before the service does.
  @Rule(
    (a) =>
      `DATABASE_QUERY_TIMEOUT_MS (${a.value}) must be above DATABASE_STATEMENT_TIMEOUT_MS (${(a.object as EnvDto).DATABASE_STATEMENT_TIMEOUT_MS}), ` +
      'so that the database gives up (and rolls back) before the service does',
    (v, env) => v === undefined || v > env.DATABASE_STATEMENT_TIMEOUT_MS,
  )
  @Int(100, 660_000)
  DATABASE_QUERY_TIMEOUT_MS?: number;

  @Bool()
  DATABASE_NAMED_STATEMENTS?: boolean;

  @Int(1, 86_400)
  MIGRATION_LOCK_TIMEOUT_S: number = 300;

  @Int(1, 3600)
  REQUEST_TIMEOUT_S: number = 30;

  @Int(1, 65535)
  EMBEDDED_POSTGRES_PORT?: number;

  @Rule(
    (a) =>
      `PAYPROVIDER_WEBHOOK_SECRET: secret ${(a.value as string[]).findIndex((v) => v.length < MIN_SECRET_LENGTH) + 1} has fewer than ` +
      `${MIN_SECRET_LENGTH} characters; in production every secret needs at least ${MIN_SECRET_LENGTH} (the provider's whsec_… secret)`,
    (v: string[], env) => !production(env) || v.every((secret) => secret.length >= MIN_SECRET_LENGTH),
  )
  @Rule('PAYPROVIDER_WEBHOOK_SECRET is required when NODE_ENV=production', (v, env) => v.length > 0 || !production(env))
  @List()
  PAYPROVIDER_WEBHOOK_SECRET: string[] = [];

  @Int(1, 86_400)
  PAYPROVIDER_WEBHOOK_TOLERANCE_S: number = 300;

  @Bool()
  PAYPROVIDER_SANDBOX: boolean = false;

  // Without it the built-in sandbox runs, whose checkout lets anyone "pay": in production that gives paid
  // tiers away, so it needs PAYPROVIDER_SANDBOX=true, said on purpose.
  @Rule(
    'PAYPROVIDER_SECRET_KEY is required when NODE_ENV=production (without it the sandbox provider would run and ' +
      'give paid tiers away); set PAYPROVIDER_SANDBOX=true only for a demo install',
    (v, env) => v !== undefined || !production(env) || env.PAYPROVIDER_SANDBOX === true,
  )
  PAYPROVIDER_SECRET_KEY?: string;

  @HttpUrl({ echo: true })
  PAYPROVIDER_API_URL: string = 'https://api.stripe.com';

  @Int(50, 10_000)
  PAYPROVIDER_TIMEOUT_MS: number = 10_000;

  // Unset: half the provider's documented account limit, 50 with a live key (100/s), 12 with a test key (25/s).
  @Int(1, 10_000)
  PAYPROVIDER_MAX_RPS?: number;

  @Int(1, 100_000)
  PAYPROVIDER_USER_MAX_PER_MINUTE: number = 30;

  // Checkout (spec §11.3): a trial needs a card unless false (then it is cancelled at its end without one);
  // promotion codes; the provider's automatic tax.
  @Bool()
  TRIAL_REQUIRE_PAYMENT_METHOD: boolean = true;

  @Bool()
  PAYPROVIDER_ALLOW_PROMOTION_CODES: boolean = false;

  @Bool()
  PAYPROVIDER_AUTOMATIC_TAX: boolean = false;

  // Provider meters (spec §13): the meter event name a metric's accepted usage is reported under. Unset: not
  // reported. The provider takes event names of at most 100 characters.
  @MeterEventName()
  PAYPROVIDER_METER_PROJECTS?: string;

  @MeterEventName()
  PAYPROVIDER_METER_AI_TOKENS?: string;

  // A window at most a day long: the provider dates each meter event (its window's start) and keeps a meter
  // event's identifier unique for 24 hours.
  @Int(1, 86_400)
  METER_FLUSH_S: number = 60;

  @Origin()
  APP_URL: string = 'http://localhost:3000';

  @Origin()
  PUBLIC_URL?: string;

  @Allow()
  TIERS_FILE?: string;

  @Int(60, 31_536_000)
  SESSION_TTL_S: number = 2_592_000;

  // Never echoed: the message names a key by its name (the audit log's actor), never by its content.
  @Rule(
    (a) =>
      `SERVICE_API_KEYS: the key named "${namedKeys(a.value as string[]).find(({ key }) => key.length < MIN_SECRET_LENGTH)?.name}" has fewer than ` +
      `${MIN_SECRET_LENGTH} characters; in production every key needs at least ${MIN_SECRET_LENGTH} (e.g. openssl rand -hex 24)`,
    (v: string[], env) => !production(env) || namedKeys(v).every(({ key }) => key.length >= MIN_SECRET_LENGTH),
  )
  @List()
  SERVICE_API_KEYS: string[] = [];

  @Int(0, 365)
  GRACE_PERIOD_DAYS: number = 7;

  // Private keys: never echoed (parseSigningKeys' messages name a key by its place, never by its content).
  // Unset outside production: a key generated once into DATA_DIR; unset in production: the token route answers 503.
  @Rule((a) => signingKeysProblem(a.value as string) ?? '', (v) => v === undefined || signingKeysProblem(v) === undefined)
  ENTITLEMENT_SIGNING_KEYS?: string;

  // The same bounds as a token's ttl_s (licensing/entitlement-token.dto.ts): a minute to ten years.
  @Int(60, 315_360_000)
  ENTITLEMENT_TOKEN_MAX_TTL_S: number = 2_678_400;

  @Allow()
  METRICS_TOKEN?: string;

  @Int(10, 86_400)
  PROVIDER_SYNC_INTERVAL_S?: number;

  @Int(1, 100)
  PROVIDER_SYNC_MAX_RPS: number = 20;

  // Plain http and loopback are accepted, like a JWKS URL. Not echoed: a URL may carry a token.
  @Rule('NOTIFY_URLS lists the same URL twice', (v: string[]) => !v.every(isHttpUrl) || new Set(v.map((u) => new URL(u).href)).size === v.length)
  @Rule((a) => `NOTIFY_URLS: entry ${(a.value as string[]).findIndex((u) => !isHttpUrl(u)) + 1} must be an absolute http(s) URL`, (v: string[]) => v.every(isHttpUrl))
  @List()
  NOTIFY_URLS: string[] = [];

  // Spend alerts (spec §16.4): the percentages of a metric's included limit that send usage.threshold, once
  // each per period (above 100: past the limit, a credits or bill metric), and the percentage under which a
  // credits metric's available amount sends credits.low where no automatic top-up sets the threshold (0: only there).
  @Rule('USAGE_ALERT_THRESHOLDS lists the same percentage twice', (v: string[]) => new Set(v.map(Number)).size === v.length)
  @Rule(
    (a) => `USAGE_ALERT_THRESHOLDS must be comma-separated whole percentages from 1 to 1000, got "${(a.value as string[]).find((t) => !isAlertThreshold(t))}"`,
    (v: string[]) => v.every(isAlertThreshold),
  )
  @List()
  USAGE_ALERT_THRESHOLDS: string[] = ['80', '100'];

  @Int(0, 100)
  CREDITS_LOW_THRESHOLD_PCT: number = 10;

  // A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes.
  @Rule('NOTIFY_SECRET is required when NOTIFY_URLS is set (it signs the notifications)', (v, env) => v !== undefined || env.NOTIFY_URLS.length === 0)
  @Rule(
    'NOTIFY_SECRET must be "whsec_" followed by the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))',
    (v) => v === undefined || isWhsecSecret(v),
  )
  NOTIFY_SECRET?: string;

  // Turns JWTs on. Not echoed: it may carry a token.
  @HttpUrl({ echo: false })
  AUTH_JWT_JWKS_URL?: string;

  // The issuer and the audience only narrow what the JWKS accepts: either one alone would accept nothing.
  @Rule('AUTH_JWT_ISSUER is set but AUTH_JWT_JWKS_URL is not: without a JWKS no JWT is accepted', (v, env) => v === undefined || env.AUTH_JWT_JWKS_URL !== undefined)
  AUTH_JWT_ISSUER?: string;

  @Rule('AUTH_JWT_AUDIENCE is set but AUTH_JWT_JWKS_URL is not: without a JWKS no JWT is accepted', (v, env) => v === undefined || env.AUTH_JWT_JWKS_URL !== undefined)
  AUTH_JWT_AUDIENCE?: string;

  // The operator console's sign-in through the company's OpenID provider (spec §14): all four or none. The
  // issuer is https, or plain http on this machine (localhost, 127.0.0.1, [::1]) for development.
  // In production the provider must send operators back to the public address, not to this machine's port.
  @Rule(
    (a) => `CONSOLE_OIDC_ISSUER must be an https URL (http only for localhost or 127.0.0.1), got "${a.value}"`,
    (v) => v === undefined || isOidcIssuer(v),
  )
  @Rule(
    'PUBLIC_URL is required with CONSOLE_OIDC_ISSUER when NODE_ENV=production: the OpenID provider sends operators back to <PUBLIC_URL>/console/oidc/callback',
    (v, env) => v === undefined || !production(env) || env.PUBLIC_URL !== undefined,
  )
  CONSOLE_OIDC_ISSUER?: string;

  @Allow()
  CONSOLE_OIDC_CLIENT_ID?: string;

  // Never echoed.
  @Allow()
  CONSOLE_OIDC_CLIENT_SECRET?: string;

  // Comes last: its rule reads the other three.
  @Rule((a) => consoleOidcMissing(a.object as EnvDto), (_v, env) => consoleOidcMissing(env) === '')
  @Rule(
    (a) => `CONSOLE_OIDC_ALLOWED_DOMAINS must list email domains such as example.com, got "${(a.value as string[]).find((d) => !isEmailDomain(d))}"`,
    (v: string[]) => v.every(isEmailDomain),
  )
  @List()
  CONSOLE_OIDC_ALLOWED_DOMAINS: string[] = [];
}

function MeterEventName(): PropertyDecorator {
  return Rule(
    (a) => `${a.property} must be the provider's meter event name: 1 to 100 characters without spaces, got "${a.value}"`,
    (v) => v === undefined || /^\S{1,100}$/.test(v),
  );
}

const CONSOLE_OIDC = ['CONSOLE_OIDC_ISSUER', 'CONSOLE_OIDC_CLIENT_ID', 'CONSOLE_OIDC_CLIENT_SECRET', 'CONSOLE_OIDC_ALLOWED_DOMAINS'] as const;

/** '' when the four CONSOLE_OIDC_* settings are all set or all unset, else the message naming the missing ones. */
function consoleOidcMissing(env: EnvDto): string {
  const isSet = (name: (typeof CONSOLE_OIDC)[number]) => (name === 'CONSOLE_OIDC_ALLOWED_DOMAINS' ? env[name].length > 0 : env[name] !== undefined);
  const missing = CONSOLE_OIDC.filter((name) => !isSet(name));
  if (missing.length === 0 || missing.length === CONSOLE_OIDC.length) return '';
  return `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required with ${CONSOLE_OIDC.filter(isSet).join(', ')}: the console's OpenID sign-in needs all four of ${CONSOLE_OIDC.join(', ')}`;
}

/** https, or http on this machine (a development provider). */
function isOidcIssuer(value: string): boolean {
  if (!isHttpUrl(value)) return false;
  const url = new URL(value);
  if (url.username || url.password || url.search || url.hash) return false;
  return url.protocol === 'https:' || ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** A domain of email addresses: labels of letters, digits and hyphens, at least two, no `@`. */
export function isEmailDomain(value: string): boolean {
  return value.length <= 253 && /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/i.test(value);
}

function isAlertThreshold(value: string): boolean {
  return /^\d{1,4}$/.test(value) && Number(value) >= 1 && Number(value) <= 1000;
}

function isWhsecSecret(value: string): boolean {
  const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value)?.[1];
  const bytes = key && key.length % 4 === 0 ? Buffer.from(key, 'base64').length : 0;
  return bytes >= 24 && bytes <= 64;
}

function signingKeysProblem(value: string): string | undefined {
  try {
    parseSigningKeys(value);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
