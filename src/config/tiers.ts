import { readFileSync } from 'node:fs';

export const METRICS = ['projects', 'ai_tokens', 'users'] as const;
export type Metric = (typeof METRICS)[number];
/** The metrics that trusted back-ends report; `users` is counted from memberships. */
export const METERED_METRICS = ['projects', 'ai_tokens'] as const satisfies readonly Metric[];
export type MeteredMetric = (typeof METERED_METRICS)[number];

/** The tier of an organisation without a paid subscription; every other tier of the table is paid. */
export const FREE_TIER = 'free';

export type TierLimits = Record<Metric, number>;
/** Tier name → limits. Always has `free`; insertion order is the order tiers are listed in. */
export type TierTable = Record<string, TierLimits>;

export const DEFAULT_TIERS: TierTable = {
  free: { projects: 3, ai_tokens: 100_000, users: 3 },
  pro: { projects: 25, ai_tokens: 2_000_000, users: 10 },
  team: { projects: 100, ai_tokens: 10_000_000, users: 50 },
  enterprise: { projects: 1000, ai_tokens: 100_000_000, users: 1000 },
};

/** The tiers that can be bought, in table order. */
export function paidTiers(tiers: TierTable): string[] {
  return Object.keys(tiers).filter((tier) => tier !== FREE_TIER);
}

export function isPaidTier(tiers: TierTable, tier: string): boolean {
  return tier !== FREE_TIER && Object.hasOwn(tiers, tier);
}

const TIER_NAME = /^[a-z][a-z0-9-]{0,31}$/;
// Limits are stored in bigint columns, but must stay exact in a JS number.
const MAX_LIMIT = Number.MAX_SAFE_INTEGER;

/** Reads and validates a tier table file; throws an Error whose message names the problem. */
export function loadTiersFile(path: string): TierTable {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`TIERS_FILE ${path}: cannot be read as JSON (${(err as Error).message})`, { cause: err });
  }
  return parseTiers(raw, `TIERS_FILE ${path}`);
}

export function parseTiers(raw: unknown, where: string): TierTable {
  if (!isPlainObject(raw)) throw new Error(`${where}: must be a JSON object of tier name → limits`);
  const table: TierTable = {};
  for (const [name, limits] of Object.entries(raw)) {
    if (!TIER_NAME.test(name)) {
      throw new Error(`${where}: tier name "${name}" must be lower-case letters, digits or dashes`);
    }
    if (!isPlainObject(limits)) throw new Error(`${where}: tier "${name}" must be an object`);
    const unknown = Object.keys(limits).filter((k) => !(METRICS as readonly string[]).includes(k));
    if (unknown.length) throw new Error(`${where}: tier "${name}" has unknown field(s) ${unknown.join(', ')}`);
    const parsed = {} as TierLimits;
    for (const metric of METRICS) {
      const value = limits[metric];
      if (value === undefined) throw new Error(`${where}: tier "${name}" is missing "${metric}"`);
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_LIMIT) {
        throw new Error(`${where}: tier "${name}" field "${metric}" must be a non-negative integer`);
      }
      parsed[metric] = value;
    }
    table[name] = parsed;
  }
  if (!table[FREE_TIER]) throw new Error(`${where}: a "${FREE_TIER}" tier is required`);
  return table;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
