import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';
import { DEFAULT_TIERS, limitsOf, MetricRule, Overage, TierPlan } from '../src/config/tiers';
import { ROOT } from './support/run-cli';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';

const dir = () => mkdtempSync(join(tmpdir(), 'billing-tiers-'));
const LIMITS = { projects: 1, ai_tokens: 2, users: 3 };
const LIMITS_FREE = { projects: 3, ai_tokens: 100_000, users: 3 };


function tiersFile(content: string): string {
  const file = join(dir(), 'tiers.json');
  writeFileSync(file, content);
  return file;
}
const load = (file: string) => loadConfig({ DATA_DIR: dir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x', TIERS_FILE: file });

/** A metric's rule with the defaults: ai_tokens counts per period, nothing rolls over. */
const rule = (limit: number, overage: Overage = 'block', perPeriod = false, rollover: number | null = null): MetricRule => ({ limit, overage, perPeriod, rollover });
const plain = (limits: Record<string, number>, more: Partial<TierPlan> = {}): TierPlan => ({
  metrics: Object.fromEntries(Object.entries(limits).map(([m, limit]) => [m, rule(limit, 'block', m === 'ai_tokens')])),
  features: {},
  trialDays: 0,
  perSeat: false,
  ...more,
});

describe('TIERS_FILE', () => {
  it('without it, the built-in table of the specification applies: its limits, and features from pro up', () => {
    const tiers = loadConfig({ DATA_DIR: dir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' }).tiers;
    expect(tiers).toBe(DEFAULT_TIERS);
    const features = (api_access: boolean, audit_log: boolean, sso: boolean) => ({ api_access, audit_log, sso });
    expect(tiers).toEqual({
      free: plain({ projects: 3, ai_tokens: 100_000, users: 3 }, { features: features(false, false, false) }),
      pro: plain({ projects: 25, ai_tokens: 2_000_000, users: 10 }, { features: features(true, false, false) }),
      team: plain({ projects: 100, ai_tokens: 10_000_000, users: 50 }, { features: features(true, true, false) }),
      enterprise: plain({ projects: 1000, ai_tokens: 100_000_000, users: 1000 }, { features: features(true, true, true) }),
    });
  });

  it("today's form keeps working: it replaces the whole table, and a limit may be 0", () => {
    const file = tiersFile(JSON.stringify({ free: { ...LIMITS, projects: 0 }, 'pro-2025': LIMITS }));
    expect(load(file).tiers).toEqual({ free: plain({ ...LIMITS, projects: 0 }), 'pro-2025': plain(LIMITS) });
  });

  it("reads the specification's example: features, trial days, overage, per-seat users and further metrics", () => {
    const file = tiersFile(JSON.stringify(SPEC_PLAN_EXAMPLE));
    const { tiers } = load(file);
    expect(Object.keys(tiers)).toEqual(['free', 'pro', 'team']);
    expect(tiers.team).toEqual({
      metrics: {
        projects: rule(100),
        ai_tokens: rule(10_000_000, 'bill', true),
        users: rule(500),
        storage_gb: rule(100),
      },
      features: { api_access: true, audit_log: true },
      trialDays: 0,
      perSeat: true,
    });
    // Every tier has every feature and every further metric: false, and limit 0, where it does not name them.
    expect(tiers.free).toEqual({
      metrics: { ...plain(LIMITS_FREE).metrics, storage_gb: rule(0) },
      features: { api_access: false, audit_log: false },
      trialDays: 0,
      perSeat: false,
    });
    expect(tiers.pro).toMatchObject({ trialDays: 14, features: { api_access: true, audit_log: false }, perSeat: false });
    // What the license SQL and the plan list read: integer limits; a per-seat tier's users limit is its max.
    expect(limitsOf(tiers.team)).toEqual({ projects: 100, ai_tokens: 10_000_000, users: 500, storage_gb: 100 });
  });

  it('accepts the object forms with their defaults, and the bounds of trial_days', () => {
    const file = tiersFile(
      JSON.stringify({
        free: { projects: { limit: 1 }, ai_tokens: { limit: 2, overage: 'block' }, users: { limit: 3 }, trial_days: 0 },
        pro: { ...LIMITS, trial_days: 730, metrics: { seats_sold: { limit: 5, overage: 'bill' }, api_calls: 0 } },
      }),
    );
    const { tiers } = load(file);
    expect(tiers.free).toEqual(plain({ ...LIMITS, seats_sold: 0, api_calls: 0 }));
    expect(tiers.pro.trialDays).toBe(730);
    expect(tiers.pro.metrics.seats_sold).toEqual(rule(5, 'bill'));
  });

  it('reads the credits policy, per-period further metrics (in every tier, also where not named) and rollovers (spec §16.1)', () => {
    const file = tiersFile(
      JSON.stringify({
        free: { ...LIMITS, ai_tokens: { limit: 100, overage: 'credits' } },
        pro: {
          ...LIMITS,
          ai_tokens: { limit: 1000, overage: 'credits', rollover: { max: 500 } },
          metrics: { gpu_s: { limit: 60, overage: 'credits', per_period: true, rollover: { max: 10 } }, storage_gb: 5 },
        },
      }),
    );
    const { tiers } = load(file);
    expect(tiers.free.metrics).toEqual({ projects: rule(1), ai_tokens: rule(100, 'credits', true), users: rule(3), gpu_s: rule(0, 'block', true), storage_gb: rule(0) });
    expect(tiers.pro.metrics).toEqual({
      projects: rule(1),
      ai_tokens: rule(1000, 'credits', true, 500),
      users: rule(3),
      gpu_s: rule(60, 'credits', true, 10),
      storage_gb: rule(5),
    });
  });

  const bad = (tier: Record<string, unknown>) => JSON.stringify({ free: LIMITS, pro: { ...LIMITS, ...tier } });
  it.each([
    ['a file that does not exist', null, /cannot be read as JSON/],
    ['not JSON', '{free:', /cannot be read as JSON/],
    ['an array', JSON.stringify([LIMITS]), /must be a JSON object/],
    ['null', 'null', /must be a JSON object/],
    ['no free tier', JSON.stringify({ pro: LIMITS }), /"free" tier is required/],
    ['an empty table', '{}', /"free" tier is required/],
    ['an upper-case tier name', JSON.stringify({ free: LIMITS, Pro: LIMITS }), /tier name "Pro"/],
    ['a tier name with a space', JSON.stringify({ free: LIMITS, 'pro plan': LIMITS }), /tier name "pro plan"/],
    ['a tier that is not an object', JSON.stringify({ free: LIMITS, pro: 5 }), /tier "pro" must be an object/],
    ['an unknown field', JSON.stringify({ free: { ...LIMITS, seats: 4 } }), /tier "free" has unknown field\(s\) seats/],
    ['a missing metric', JSON.stringify({ free: { projects: 1, users: 3 } }), /tier "free" is missing "ai_tokens"/],
    ['a negative limit', JSON.stringify({ free: { ...LIMITS, users: -1 } }), /tier "free" field "users" must be a non-negative integer/],
    ['a fractional limit', bad({ projects: 1.5 }), /tier "pro" field "projects" must be a non-negative integer/],
    ['a limit as a string', bad({ ai_tokens: '2' }), /tier "pro" field "ai_tokens" must be a non-negative integer/],
    ['a limit beyond 2^53', `{"free":{"projects":1,"ai_tokens":90071992547409930,"users":3}}`, /tier "free" field "ai_tokens" must be/],
    ['a null limit', bad({ users: null }), /tier "pro" field "users" must be a non-negative integer/],
    // features
    ['features as a list', bad({ features: ['sso'] }), /tier "pro" field "features" must be an object/],
    ['an upper-case feature name', bad({ features: { SSO: true } }), /tier "pro" field "features.SSO" is not a feature name/],
    ['a feature name starting with a digit', bad({ features: { '2fa': true } }), /tier "pro" field "features.2fa" is not a feature name/],
    ['a feature name of 65 characters', bad({ features: { [`f${'x'.repeat(64)}`]: true } }), /tier "pro" field "features.fx+" is not a feature name/],
    ['a feature that is not a boolean', bad({ features: { sso: 'yes' } }), /tier "pro" field "features.sso" must be true or false/],
    // trial_days
    ['trial_days below 0', bad({ trial_days: -1 }), /tier "pro" field "trial_days" must be an integer from 0 to 730/],
    ['trial_days above 730', bad({ trial_days: 731 }), /tier "pro" field "trial_days" must be an integer from 0 to 730/],
    ['trial_days as a string', bad({ trial_days: '14' }), /tier "pro" field "trial_days" must be an integer/],
    // metric objects
    ['a metric object without limit', bad({ ai_tokens: { overage: 'bill' } }), /tier "pro" field "ai_tokens.limit" must be a non-negative integer/],
    ['an unknown overage', bad({ ai_tokens: { limit: 5, overage: 'allow' } }), /tier "pro" field "ai_tokens.overage" must be "block", "bill" or "credits"/],
    ['an unknown key in a metric object', bad({ projects: { limit: 5, soft: true } }), /tier "pro" field "projects" has unknown field\(s\) soft/],
    ['users billed past their limit', bad({ users: { limit: 5, overage: 'bill' } }), /tier "pro" field "users.overage" must be "block"/],
    // per-seat users
    ['per_seat without max', bad({ users: { per_seat: true } }), /tier "pro" field "users.max" is required with per_seat/],
    ['per_seat false', bad({ users: { per_seat: false, max: 5 } }), /tier "pro" field "users.per_seat" must be true/],
    ['a max of 0 seats', bad({ users: { per_seat: true, max: 0 } }), /tier "pro" field "users.max" must be an integer from 1/],
    ['a fractional max', bad({ users: { per_seat: true, max: 2.5 } }), /tier "pro" field "users.max" must be an integer from 1/],
    ['per_seat with a limit', bad({ users: { per_seat: true, max: 5, limit: 5 } }), /tier "pro" field "users" has unknown field\(s\) limit/],
    // further metrics
    ['metrics as a number', bad({ metrics: 5 }), /tier "pro" field "metrics" must be an object/],
    ['a further metric named like one of the three', bad({ metrics: { projects: 5 } }), /tier "pro" field "metrics.projects" is one of the three metrics/],
    ['a further metric with a bad name', bad({ metrics: { 'storage-gb': 5 } }), /tier "pro" field "metrics.storage-gb" is not a metric name/],
    ['a further metric with a bad limit', bad({ metrics: { storage_gb: -5 } }), /tier "pro" field "metrics.storage_gb" must be a non-negative integer/],
    ['a further metric with a bad overage', bad({ metrics: { storage_gb: { limit: 1, overage: 'x' } } }), /tier "pro" field "metrics.storage_gb.overage" must be "block", "bill" or "credits"/],
    // credits (spec §16.1)
    ['credits on a gauge', bad({ projects: { limit: 5, overage: 'credits' } }), /tier "pro" field "projects.overage" is "credits", but "projects" does not count per billing period/],
    ['credits on users', bad({ users: { limit: 5, overage: 'credits' } }), /tier "pro" field "users.overage" must be "block"/],
    ['credits on a further metric not per period', bad({ metrics: { gpu_s: { limit: 5, overage: 'credits' } } }), /tier "pro" field "metrics.gpu_s.overage" is "credits", but "gpu_s" does not count per billing period/],
    ['per_period on ai_tokens', bad({ ai_tokens: { limit: 5, per_period: true } }), /tier "pro" field "ai_tokens" has unknown field\(s\) per_period/],
    ['per_period not a boolean', bad({ metrics: { gpu_s: { limit: 5, per_period: 'yes' } } }), /tier "pro" field "metrics.gpu_s.per_period" must be true or false/],
    [
      'per_period true in one tier and false in another',
      JSON.stringify({ free: { ...LIMITS, metrics: { gpu_s: { limit: 1, per_period: false } } }, pro: { ...LIMITS, metrics: { gpu_s: { limit: 5, per_period: true } } } }),
      /tier "free" field "metrics.gpu_s.per_period" is false, but tier "pro" declares it true/,
    ],
    ['rollover without credits', bad({ ai_tokens: { limit: 5, rollover: { max: 5 } } }), /tier "pro" field "ai_tokens.rollover" needs "overage": "credits"/],
    ['rollover without max', bad({ ai_tokens: { limit: 5, overage: 'credits', rollover: {} } }), /tier "pro" field "ai_tokens.rollover.max" is required/],
    ['a rollover max of 0', bad({ ai_tokens: { limit: 5, overage: 'credits', rollover: { max: 0 } } }), /tier "pro" field "ai_tokens.rollover.max" must be an integer from 1/],
    ['a rollover that is a number', bad({ ai_tokens: { limit: 5, overage: 'credits', rollover: 5 } }), /tier "pro" field "ai_tokens.rollover" must be an object/],
    ['a rollover with an unknown field', bad({ ai_tokens: { limit: 5, overage: 'credits', rollover: { max: 5, min: 1 } } }), /tier "pro" field "ai_tokens.rollover" has unknown field\(s\) min/],
  ])('%s stops the configuration with a message naming TIERS_FILE, the tier and the field', (_label, content, message) => {
    const file = content === null ? join(dir(), 'missing.json') : tiersFile(content);
    expect(() => load(file)).toThrow(ConfigError);
    expect(() => load(file)).toThrow(/^TIERS_FILE /);
    expect(() => load(file)).toThrow(message);
  });

  // Needs the build (`npm run build`; npm test runs it first).
  it('the service refuses to start on a bad TIERS_FILE, before touching any database', async () => {
    const main = join(ROOT, 'dist', 'src', 'main.js');
    expect(existsSync(main)).toBe(true);
    const file = tiersFile(JSON.stringify({ pro: LIMITS }));
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [main], {
        cwd: dir(),
        env: {
          PATH: process.env.PATH,
          TIERS_FILE: file,
          DATA_DIR: dir(),
          PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x',
          // Unreachable on purpose: the start must fail on the configuration, not here.
          DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
          PORT: '0',
        },
      });
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.on('error', reject);
      child.on('close', (c) => resolve({ code: c, stderr: err }));
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/Configuration error: TIERS_FILE .*"free" tier is required/);
  });
});
