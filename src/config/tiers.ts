/** The metrics every tier has (spec §5); a TIERS_FILE may add further ones (`metrics`, spec §11.1). */
export const METRICS = ['projects', 'ai_tokens', 'users'] as const;
export type Metric = (typeof METRICS)[number];
/** The metrics that trusted back-ends report; `users` is counted from memberships. */
export const METERED_METRICS = ['projects', 'ai_tokens'] as const satisfies readonly Metric[];
export type MeteredMetric = (typeof METERED_METRICS)[number];

/** The tier of an organisation without a paid subscription; every other tier of the table is paid. */
export const FREE_TIER = 'free';

/**
 * What a report past the limit does: refused (`block`, spec §7), accepted and billed (`bill`, spec §13), or drawn
 * from the organisation's credit grants, refused when they cannot cover it (`credits`, spec §16.1).
 */
export type Overage = 'block' | 'bill' | 'credits';
export const OVERAGES = ['block', 'bill', 'credits'] as const satisfies readonly Overage[];

export interface MetricRule {
  limit: number;
  overage: Overage;
  /**
   * Counted within the billing period, starting again at 0 in the next (`ai_tokens`, and a further metric declared
   * `"per_period": true`); else a gauge. A property of the metric, the same in every tier; such a metric takes no
   * negative report, and only such a metric may have the `credits` policy.
   */
  perPeriod: boolean;
  /** `"rollover": {"max": N}`: the unused included amount, at most N, carried into the next period as a grant; else null. */
  rollover: number | null;
}

/** One tier of the plan table (spec §11.1), with every default filled in. */
export interface TierPlan {
  /**
   * Every metric of the table, in order: the three, then the further metrics any tier names (limit 0 in a
   * tier that does not name one). For a per-seat tier, `users.limit` is its `max`.
   */
  metrics: Record<string, MetricRule>;
  /** Every feature any tier of the table names, in order of first mention; false where this tier does not. */
  features: Record<string, boolean>;
  trialDays: number;
  /** Sold per seat (`users: {"per_seat": true, "max": N}`). */
  perSeat: boolean;
}

/** Tier name → plan. Always has `free`; insertion order is the order tiers are listed in. */
export type TierTable = Record<string, TierPlan>;

/** The built-in table (spec §5 and 11.1), in TIERS_FILE's own form. */
export const DEFAULT_TIERS_FILE = {
  free: { projects: 3, ai_tokens: 100_000, users: 3 },
  pro: { projects: 25, ai_tokens: 2_000_000, users: 10, features: { api_access: true } },
  team: { projects: 100, ai_tokens: 10_000_000, users: 50, features: { api_access: true, audit_log: true } },
  enterprise: { projects: 1000, ai_tokens: 100_000_000, users: 1000, features: { api_access: true, audit_log: true, sso: true } },
};

/**
 * A tier's integer limits, metric → limit (what the license SQL and the plan list read). A per-seat tier's
 * `users` is its `max`; the limit in force is the subscription's seats, at most that (licensing.license_state).
 */
export function limitsOf(plan: TierPlan): Record<string, number> {
  return Object.fromEntries(Object.entries(plan.metrics).map(([metric, rule]) => [metric, rule.limit]));
}

/** What a report past each limit of a tier does, metric → overage. */
export function overagesOf(plan: TierPlan): Record<string, Overage> {
  return Object.fromEntries(Object.entries(plan.metrics).map(([metric, rule]) => [metric, rule.overage]));
}

/** A tier's rollovers, metric → the most carried into the next period (metrics with one only). */
export function rolloversOf(plan: TierPlan): Record<string, number> {
  return Object.fromEntries(Object.entries(plan.metrics).flatMap(([metric, rule]) => (rule.rollover === null ? [] : [[metric, rule.rollover]])));
}

/** The metrics counted within the billing period (the same in every tier): ai_tokens, then the further ones declared so. */
export function perPeriodMetrics(tiers: TierTable): string[] {
  return Object.entries(tiers[FREE_TIER].metrics).flatMap(([metric, rule]) => (rule.perPeriod ? [metric] : []));
}

/** Whether `metric` counts within the billing period (and may be sold as credits, spec §16.1). */
export function countsPerPeriod(tiers: TierTable, metric: string): boolean {
  return tiers[FREE_TIER].metrics[metric]?.perPeriod === true;
}

// The tier table as the license's argument, serialised once per table rather than per request.
const tiersJson = new WeakMap<TierTable, string>();

/**
 * The license's arguments besides the organisation (`licensing.license_state(org, tiers, grace_s)`, see
 * src/licensing/license-state.ts): the tier table as PostgreSQL reads it (jsonb: tier → `{rank, per_seat,
 * limits, overage, features, rollover, per_period}`, read by `licensing.tier_plan` only) and the grace period in
 * seconds. `per_period` is the table's (every tier carries the same list).
 */
export function licenseArguments(config: { tiers: TierTable; gracePeriodDays: number }): { tiers: string; graceS: number } {
  let tiers = tiersJson.get(config.tiers);
  if (tiers === undefined) {
    tiers = JSON.stringify(
      Object.fromEntries(
        Object.entries(config.tiers).map(([tier, plan], rank) => [
          tier,
          {
            rank,
            per_seat: plan.perSeat,
            limits: limitsOf(plan),
            overage: overagesOf(plan),
            features: plan.features,
            rollover: rolloversOf(plan),
            per_period: perPeriodMetrics(config.tiers),
          },
        ]),
      ),
    );
    tiersJson.set(config.tiers, tiers);
  }
  return { tiers, graceS: config.gracePeriodDays * 86_400 };
}

/**
 * The metrics trusted back-ends report through the usage API (spec §7, §11.1): every metric of the table but
 * `users`, which is counted from memberships. The three's `projects` and `ai_tokens` first, then the further ones.
 */
export function reportedMetrics(tiers: TierTable): string[] {
  return tableMetrics(tiers).filter((metric) => metric !== 'users');
}

/** Every metric of the table: the three, then the further metrics (every tier lists them all, in order). */
export function tableMetrics(tiers: TierTable): string[] {
  return Object.keys(tiers[FREE_TIER].metrics);
}

/** Every feature of the table, in order of first mention (every tier lists them all). */
export function tableFeatures(tiers: TierTable): string[] {
  return Object.keys(tiers[FREE_TIER].features);
}

/** The tiers that can be bought, in table order. */
export function paidTiers(tiers: TierTable): string[] {
  return Object.keys(tiers).filter((tier) => tier !== FREE_TIER);
}

export function isPaidTier(tiers: TierTable, tier: string): boolean {
  return tier !== FREE_TIER && Object.hasOwn(tiers, tier);
}

const TIER_NAME = /^[a-z][a-z0-9-]{0,31}$/;
/** The names of features and further metrics (spec §11.1): an entitlement is either. */
export const ENTITLEMENT_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const NAME_RULE = 'lower-case letters, digits or _, starting with a letter, at most 64 characters';
// Limits are stored in bigint columns, but must stay exact in a JS number.
const MAX_LIMIT = Number.MAX_SAFE_INTEGER;
const MAX_TRIAL_DAYS = 730;
const TIER_FIELDS = [...METRICS, 'features', 'trial_days', 'metrics'];

/** A metric as a tier's entry says it: `perPeriod` undefined where the entry does not say (the table decides). */
interface MetricEntry extends Omit<MetricRule, 'perPeriod'> {
  perPeriod: boolean | undefined;
}

/** A tier as its own entry says it, before the table-wide sets of features and further metrics fill it in. */
interface TierEntry {
  metrics: Record<Metric, MetricEntry>;
  further: Record<string, MetricEntry>;
  features: Record<string, boolean>;
  trialDays: number;
  perSeat: boolean;
}

/** Names a field of the tier being read in a thrown Error: `<where>: tier "<tier>" field "<field>" <problem>`. */
type FieldError = (field: string, problem: string) => Error;

/** Validates a tier table in TIERS_FILE's form (spec §11.1, §16.1) and fills in every default. */
export function parseTiers(raw: unknown, where: string): TierTable {
  if (!isPlainObject(raw)) throw new Error(`${where}: must be a JSON object of tier name → limits`);
  const entries: [string, TierEntry][] = Object.entries(raw).map(([name, value]) => {
    if (!TIER_NAME.test(name)) throw new Error(`${where}: tier name "${name}" must be lower-case letters, digits or dashes`);
    const tierError = (problem: string) => new Error(`${where}: tier "${name}" ${problem}`);
    return [name, parseTier(value, tierError)];
  });
  if (!entries.some(([name]) => name === FREE_TIER)) throw new Error(`${where}: a "${FREE_TIER}" tier is required`);
  const features = unique(entries.flatMap(([, tier]) => Object.keys(tier.features)));
  const further = unique(entries.flatMap(([, tier]) => Object.keys(tier.further)));
  const perPeriod = perPeriodOfTable(entries, further, where);
  const table: TierTable = {};
  for (const [name, tier] of entries) {
    const fieldError: FieldError = (field, problem) => new Error(`${where}: tier "${name}" field "${field}" ${problem}`);
    const rule = (metric: string, entry: MetricEntry | undefined, field: string): MetricRule =>
      creditRule(metric, entry ?? { limit: 0, overage: 'block', perPeriod: undefined, rollover: null }, perPeriod.has(metric), field, fieldError);
    table[name] = {
      metrics: {
        ...Object.fromEntries(METRICS.map((m) => [m, rule(m, tier.metrics[m], m)])),
        ...Object.fromEntries(further.map((m) => [m, rule(m, tier.further[m], `metrics.${m}`)])),
      },
      features: Object.fromEntries(features.map((f) => [f, tier.features[f] ?? false])),
      trialDays: tier.trialDays,
      perSeat: tier.perSeat,
    };
  }
  return table;
}

/**
 * The metrics counted per period: ai_tokens, and each further metric a tier declares `"per_period": true`. It is
 * the metric's nature, not a tier's choice (a counter cannot change its period with the tier), so no tier may
 * declare it false where another declares it true.
 */
function perPeriodOfTable(entries: [string, TierEntry][], further: string[], where: string): Set<string> {
  const perPeriod = new Set<string>(['ai_tokens']);
  for (const metric of further) {
    const saying = (value: boolean) => entries.filter(([, tier]) => tier.further[metric]?.perPeriod === value).map(([name]) => name);
    const [yes, no] = [saying(true), saying(false)];
    if (yes.length && no.length) {
      throw new Error(
        `${where}: tier "${no[0]}" field "metrics.${metric}.per_period" is false, but tier "${yes[0]}" declares it true: a metric counts per billing period in every tier or in none`,
      );
    }
    if (yes.length) perPeriod.add(metric);
  }
  return perPeriod;
}

/** The rule with the table's `perPeriod`, checking what only a per-period metric may have (spec §16.1). */
function creditRule(metric: string, entry: MetricEntry, perPeriod: boolean, field: string, fieldError: FieldError): MetricRule {
  if (entry.overage === 'credits' && !perPeriod) {
    throw fieldError(
      `${field}.overage`,
      `is "credits", but "${metric}" does not count per billing period: credits are for ai_tokens or a further metric declared "per_period": true`,
    );
  }
  if (entry.rollover !== null && entry.overage !== 'credits') {
    throw fieldError(`${field}.rollover`, 'needs "overage": "credits": what rolls over is a credit grant, which only a credits metric draws on');
  }
  return { limit: entry.limit, overage: entry.overage, perPeriod, rollover: entry.rollover };
}

function parseTier(value: unknown, tierError: (problem: string) => Error): TierEntry {
  if (!isPlainObject(value)) throw tierError('must be an object');
  const unknown = Object.keys(value).filter((k) => !TIER_FIELDS.includes(k));
  if (unknown.length) throw tierError(`has unknown field(s) ${unknown.join(', ')}`);
  for (const metric of METRICS) if (value[metric] === undefined) throw tierError(`is missing "${metric}"`);
  const fieldError: FieldError = (field, problem) => tierError(`field "${field}" ${problem}`);
  const users = parseUsers(value.users, fieldError);
  return {
    metrics: {
      projects: parseMetric(value.projects, 'projects', fieldError),
      ai_tokens: parseMetric(value.ai_tokens, 'ai_tokens', fieldError),
      users: users.rule,
    },
    further: parseFurtherMetrics(value.metrics, fieldError),
    features: parseFeatures(value.features, fieldError),
    trialDays: value.trial_days === undefined ? 0 : integer(value.trial_days, 'trial_days', 0, MAX_TRIAL_DAYS, fieldError),
    perSeat: users.perSeat,
  };
}

/**
 * A limit, or `{limit, overage?, rollover?}` (and `per_period` for a further metric: `further`). The three never
 * say `per_period`: ai_tokens counts per period and projects is a gauge, whatever a tier says.
 */
function parseMetric(value: unknown, field: string, fieldError: FieldError, further = false): MetricEntry {
  if (!isPlainObject(value)) return { limit: limit(value, field, fieldError), overage: 'block', perPeriod: undefined, rollover: null };
  closed(value, ['limit', 'overage', 'rollover', ...(further ? ['per_period'] : [])], field, fieldError);
  const overage = value.overage ?? 'block';
  if (!(OVERAGES as readonly unknown[]).includes(overage)) throw fieldError(`${field}.overage`, 'must be "block", "bill" or "credits"');
  if (value.per_period !== undefined && typeof value.per_period !== 'boolean') throw fieldError(`${field}.per_period`, 'must be true or false');
  return {
    limit: limit(value.limit, `${field}.limit`, fieldError),
    overage: overage as Overage,
    perPeriod: value.per_period as boolean | undefined,
    rollover: value.rollover === undefined ? null : parseRollover(value.rollover, `${field}.rollover`, fieldError),
  };
}

/** `{"max": N}`, N ≥ 1. */
function parseRollover(value: unknown, field: string, fieldError: FieldError): number {
  if (!isPlainObject(value)) throw fieldError(field, 'must be an object {"max": N}');
  closed(value, ['max'], field, fieldError);
  if (value.max === undefined) throw fieldError(`${field}.max`, 'is required: the most of the unused included amount carried into the next period');
  return integer(value.max, `${field}.max`, 1, MAX_LIMIT, fieldError);
}

/** `users`: a limit, `{limit}`, or `{"per_seat": true, "max": N}` (then the limit is at most `max` seats). */
function parseUsers(value: unknown, fieldError: FieldError): { rule: MetricEntry; perSeat: boolean } {
  if (!isPlainObject(value) || value.per_seat === undefined) {
    const rule = parseMetric(value, 'users', fieldError);
    // Members are added, not reported: there is no report past the limit to accept and bill, or to draw credits for.
    if (rule.overage !== 'block') throw fieldError('users.overage', 'must be "block": users are counted from memberships, not reported');
    if (rule.rollover !== null) throw fieldError('users.rollover', 'is not allowed: users are counted from memberships, not per period');
    return { rule, perSeat: false };
  }
  closed(value, ['per_seat', 'max'], 'users', fieldError);
  if (value.per_seat !== true) throw fieldError('users.per_seat', 'must be true (or left out, with a plain limit)');
  if (value.max === undefined) throw fieldError('users.max', 'is required with per_seat');
  return { rule: { limit: integer(value.max, 'users.max', 1, MAX_LIMIT, fieldError), overage: 'block', perPeriod: undefined, rollover: null }, perSeat: true };
}

function parseFurtherMetrics(value: unknown, fieldError: FieldError): Record<string, MetricEntry> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) throw fieldError('metrics', 'must be an object of metric name → limit');
  return Object.fromEntries(
    Object.entries(value).map(([metric, rule]) => {
      if (!ENTITLEMENT_NAME.test(metric)) throw fieldError(`metrics.${metric}`, `is not a metric name: ${NAME_RULE}`);
      if ((METRICS as readonly string[]).includes(metric)) {
        throw fieldError(`metrics.${metric}`, "is one of the three metrics: give it at the tier's top level");
      }
      return [metric, parseMetric(rule, `metrics.${metric}`, fieldError, true)];
    }),
  );
}

function parseFeatures(value: unknown, fieldError: FieldError): Record<string, boolean> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) throw fieldError('features', 'must be an object of feature name → true or false');
  for (const [feature, on] of Object.entries(value)) {
    if (!ENTITLEMENT_NAME.test(feature)) throw fieldError(`features.${feature}`, `is not a feature name: ${NAME_RULE}`);
    if (typeof on !== 'boolean') throw fieldError(`features.${feature}`, 'must be true or false');
  }
  return value as Record<string, boolean>;
}

function limit(value: unknown, field: string, fieldError: FieldError): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_LIMIT) {
    throw fieldError(field, 'must be a non-negative integer');
  }
  return value;
}

function integer(value: unknown, field: string, min: number, max: number, fieldError: FieldError): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw fieldError(field, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

function closed(value: Record<string, unknown>, fields: string[], field: string, fieldError: FieldError): void {
  const unknown = Object.keys(value).filter((k) => !fields.includes(k));
  if (unknown.length) throw fieldError(field, `has unknown field(s) ${unknown.join(', ')} (allowed: ${fields.join(', ')})`);
}

function unique(names: string[]): string[] {
  return [...new Set(names)];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const DEFAULT_TIERS: TierTable = parseTiers(DEFAULT_TIERS_FILE, 'the built-in tier table');
