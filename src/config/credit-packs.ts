import { readFileSync } from 'node:fs';
import { countsPerPeriod, ENTITLEMENT_NAME, FREE_TIER, parseTiers, TierTable } from './tiers';

/** A credit pack of the tier table (spec §16.3): so many credits of one metric, bought as one provider price. */
export interface CreditPack {
  metric: string;
  /** Credits per pack; a checkout of `quantity` packs grants `amount × quantity`. */
  amount: number;
  /** The grant expires this many days after it was made; null: never. */
  expiresAfterDays: number | null;
}

/** Pack name → pack, in the file's order. */
export type CreditPacks = Record<string, CreditPack>;

/** What TIERS_FILE holds: the tiers (spec §11.1) and the credit packs sold for them (spec §16.3). */
export interface TierTableFile {
  tiers: TierTable;
  creditPacks: CreditPacks;
}

/** The largest grant the admin route takes (spec §16.2); a pack's amount stays within it. */
export const MAX_PACK_AMOUNT = 1_000_000_000_000;
/** Ten years: longer is "never", which leaving the field out says. */
export const MAX_PACK_EXPIRY_DAYS = 3650;
const PACK_FIELDS = ['metric', 'amount', 'expires_after_days'];
const FILE_FIELDS = ['tiers', 'credit_packs'];

/** Reads and validates TIERS_FILE; throws an Error whose message names the tier or pack and the field. */
export function loadTierTableFile(path: string): TierTableFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`TIERS_FILE ${path}: cannot be read as JSON (${(err as Error).message})`, { cause: err });
  }
  return parseTierTable(raw, `TIERS_FILE ${path}`);
}

/**
 * The file's two forms: the bare table of spec §11.1 (tier name → tier; it always has `free`), or
 * `{"tiers": {…that table…}, "credit_packs": {…}}`. A bare table never lacks `free`, so an object without it
 * whose `tiers` is there is the second form, whatever its tiers are called.
 */
export function parseTierTable(raw: unknown, where: string): TierTableFile {
  if (!isPlainObject(raw) || Object.hasOwn(raw, FREE_TIER) || !Object.hasOwn(raw, 'tiers')) {
    return { tiers: parseTiers(raw, where), creditPacks: {} };
  }
  const unknown = Object.keys(raw).filter((k) => !FILE_FIELDS.includes(k));
  if (unknown.length) throw new Error(`${where}: has unknown field(s) ${unknown.join(', ')} (allowed: ${FILE_FIELDS.join(', ')})`);
  const tiers = parseTiers(raw.tiers, `${where} field "tiers"`);
  return { tiers, creditPacks: parseCreditPacks(raw.credit_packs, tiers, where) };
}

function parseCreditPacks(raw: unknown, tiers: TierTable, where: string): CreditPacks {
  if (raw === undefined) return {};
  if (!isPlainObject(raw)) throw new Error(`${where}: "credit_packs" must be an object of pack name → pack`);
  return Object.fromEntries(
    Object.entries(raw).map(([name, value]) => {
      if (!ENTITLEMENT_NAME.test(name)) {
        throw new Error(`${where}: credit pack name "${name}" must be lower-case letters, digits or _, starting with a letter, at most 64 characters`);
      }
      return [name, parsePack(value, tiers, (field, problem) => new Error(`${where}: credit pack "${name}" ${field ? `field "${field}" ` : ''}${problem}`))];
    }),
  );
}

function parsePack(value: unknown, tiers: TierTable, packError: (field: string | undefined, problem: string) => Error): CreditPack {
  if (!isPlainObject(value)) throw packError(undefined, 'must be an object with metric and amount');
  const unknown = Object.keys(value).filter((k) => !PACK_FIELDS.includes(k));
  if (unknown.length) throw packError(undefined, `has unknown field(s) ${unknown.join(', ')} (allowed: ${PACK_FIELDS.join(', ')})`);
  const { metric, amount, expires_after_days: expires } = value;
  if (typeof metric !== 'string') throw packError('metric', 'is required: the metric whose credits the pack sells');
  if (!Object.hasOwn(tiers[FREE_TIER].metrics, metric)) throw packError('metric', `names no metric of the tier table: "${metric}"`);
  if (!countsPerPeriod(tiers, metric)) {
    throw packError('metric', `"${metric}" does not count per billing period: credits are sold for ai_tokens or a metric declared "per_period": true`);
  }
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1 || amount > MAX_PACK_AMOUNT) {
    throw packError('amount', `must be an integer from 1 to ${MAX_PACK_AMOUNT}`);
  }
  if (expires !== undefined && (typeof expires !== 'number' || !Number.isInteger(expires) || expires < 1 || expires > MAX_PACK_EXPIRY_DAYS)) {
    throw packError('expires_after_days', `must be an integer from 1 to ${MAX_PACK_EXPIRY_DAYS} (leave it out for credits that never expire)`);
  }
  return { metric, amount, expiresAfterDays: expires ?? null };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
