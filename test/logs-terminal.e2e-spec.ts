import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { freePort } from './support/free-port';
import { MAIN, PROCESS_TEST_TIMEOUT_MS, START_TIMEOUT_MS } from './support/server-process';

/**
 * Runs the built service (`npm start`'s `node dist/src/main.js`) until it gives up on a database that is not
 * there, which it does after its first log lines, and answers what it wrote to stdout. On a terminal: under a
 * real pseudo-terminal (util-linux `script`, as a developer's shell gives one); else on a pipe, as a log
 * collector or `npm start | tee` reads it.
 */
async function firstLines(env: Record<string, string>, terminal: boolean): Promise<string[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'billing-logs-'));
  const fullEnv = { PATH: process.env.PATH!, DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: `postgres://app@127.0.0.1:${await freePort()}/billing`, ...env };
  const [command, args] = terminal
    ? ['script', ['-qfec', `'${process.execPath}' '${MAIN}'`, '/dev/null']]
    : [process.execPath, [MAIN]];
  const child = spawn(command, args as string[], { cwd: dataDir, env: fullEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), START_TIMEOUT_MS);
  await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return stripVTControlCharacters(stdout).split(/\r?\n/).filter((line) => line.trim() !== '');
}

const DEVELOPMENT = { NODE_ENV: 'development', PAYPROVIDER_WEBHOOK_SECRET: 'whsec_logs_test_secret' };

/** Logs are JSON lines for collectors, and readable on a developer's terminal (issue #38). */
describe('the log format follows where stdout goes', () => {
  it('on a terminal in development: one readable line per entry, with the time, the level and the context', async () => {
    const lines = await firstLines(DEVELOPMENT, true);
    expect(lines.find((line) => line.includes('database: PostgreSQL'))).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: database: PostgreSQL postgres:\/\/app@127\.0\.0\.1:\d+\/billing \(DATABASE_URL\)$/,
    );
    expect(lines.find((line) => line.includes('ECONNREFUSED'))).toMatch(/^\[[\d:.]+\] ERROR: \w+: /);
    expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
  }, PROCESS_TEST_TIMEOUT_MS);

  it('on a pipe: JSON, one object a line', async () => {
    const lines = await firstLines(DEVELOPMENT, false);
    expect(lines.length).toBeGreaterThan(0);
    const entries = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(entries[0]).toMatchObject({ level: 30, msg: expect.stringMatching(/^database: PostgreSQL/) });
  }, PROCESS_TEST_TIMEOUT_MS);

  it('in production: JSON even on a terminal', async () => {
    const lines = await firstLines(
      {
        NODE_ENV: 'production',
        PAYPROVIDER_WEBHOOK_SECRET: 'whsec_logs_test_production_secret',
        PAYPROVIDER_SECRET_KEY: 'sk_test_logs_test_production_key',
        PAYPROVIDER_API_URL: `http://127.0.0.1:${await freePort()}`,
      },
      true,
    );
    expect(lines.length).toBeGreaterThan(0);
    const entries = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(entries[0]).toMatchObject({ level: 30, msg: expect.stringMatching(/^database: PostgreSQL/) });
  }, PROCESS_TEST_TIMEOUT_MS);
});
