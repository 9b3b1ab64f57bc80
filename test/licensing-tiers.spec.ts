import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';
import { DEFAULT_TIERS } from '../src/config/tiers';
import { ROOT } from './support/run-cli';

const dir = () => mkdtempSync(join(tmpdir(), 'billing-tiers-'));
const LIMITS = { projects: 1, ai_tokens: 2, users: 3 };

function tiersFile(content: string): string {
  const file = join(dir(), 'tiers.json');
  writeFileSync(file, content);
  return file;
}
const load = (file: string) => loadConfig({ DATA_DIR: dir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x', TIERS_FILE: file });

describe('TIERS_FILE', () => {
  it('without it, the built-in table of the specification applies', () => {
    expect(loadConfig({ DATA_DIR: dir(), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' }).tiers).toEqual({
      free: { projects: 3, ai_tokens: 100_000, users: 3 },
      pro: { projects: 25, ai_tokens: 2_000_000, users: 10 },
      team: { projects: 100, ai_tokens: 10_000_000, users: 50 },
      enterprise: { projects: 1000, ai_tokens: 100_000_000, users: 1000 },
    });
    expect(DEFAULT_TIERS.free).toEqual({ projects: 3, ai_tokens: 100_000, users: 3 });
  });

  it('replaces the whole table, and a limit may be 0', () => {
    const file = tiersFile(JSON.stringify({ free: { ...LIMITS, projects: 0 }, 'pro-2025': LIMITS }));
    expect(load(file).tiers).toEqual({ free: { ...LIMITS, projects: 0 }, 'pro-2025': LIMITS });
  });

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
    ['an unknown field', JSON.stringify({ free: { ...LIMITS, seats: 4 } }), /unknown field\(s\) seats/],
    ['a missing metric', JSON.stringify({ free: { projects: 1, users: 3 } }), /missing "ai_tokens"/],
    ['a negative limit', JSON.stringify({ free: { ...LIMITS, users: -1 } }), /"users" must be a non-negative integer/],
    ['a fractional limit', JSON.stringify({ free: { ...LIMITS, projects: 1.5 } }), /"projects" must be a non-negative integer/],
    ['a limit as a string', JSON.stringify({ free: { ...LIMITS, ai_tokens: '2' } }), /"ai_tokens" must be a non-negative integer/],
    ['a limit beyond 2^53', `{"free":{"projects":1,"ai_tokens":90071992547409930,"users":3}}`, /"ai_tokens" must be/],
    ['a null limit', JSON.stringify({ free: { ...LIMITS, users: null } }), /"users" must be a non-negative integer/],
  ])('%s stops the configuration with a message naming TIERS_FILE', (_label, content, message) => {
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
