import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/app-config';

const DIRECT = 'postgres://app:secret@postgres:5432/billing';
const POOLED = 'postgres://app:secret@pgbouncer:6432/billing';
const base = (env: Record<string, string> = {}) => ({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'config-db-')),
  PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x',
  ...env,
});

describe('database, migration and request settings', () => {
  it('defaults: statement 5 s, query timeout just above it, named statements, 300 s migration wait, 30 s requests', () => {
    const config = loadConfig(base({ DATABASE_URL: DIRECT }));
    expect(config).toMatchObject({
      databaseUrl: DIRECT,
      databaseDirectUrl: undefined,
      databaseThroughPooler: false,
      databaseStatementTimeoutMs: 5000,
      databaseQueryTimeoutMs: 6000,
      databaseNamedStatements: true,
      migrationLockTimeoutS: 300,
      requestTimeoutS: 30,
    });
  });

  it('a DATABASE_DIRECT_URL other than DATABASE_URL means a pooler: statements unnamed unless said otherwise', () => {
    expect(loadConfig(base({ DATABASE_URL: POOLED, DATABASE_DIRECT_URL: DIRECT })).databaseThroughPooler).toBe(true);
    expect(loadConfig(base({ DATABASE_URL: DIRECT, DATABASE_DIRECT_URL: DIRECT })).databaseThroughPooler).toBe(false);
    expect(loadConfig(base({ DATABASE_URL: POOLED, DATABASE_DIRECT_URL: DIRECT })).databaseNamedStatements).toBe(false);
    expect(loadConfig(base({ DATABASE_URL: DIRECT, DATABASE_DIRECT_URL: DIRECT })).databaseNamedStatements).toBe(true);
    const keeps = loadConfig(base({ DATABASE_URL: POOLED, DATABASE_DIRECT_URL: DIRECT, DATABASE_NAMED_STATEMENTS: 'true' }));
    expect(keeps.databaseNamedStatements).toBe(true);
    expect(loadConfig(base({ DATABASE_URL: DIRECT, DATABASE_NAMED_STATEMENTS: 'false' })).databaseNamedStatements).toBe(false);
  });

  it('the query timeout follows the statement timeout, and may not be at or below it', () => {
    expect(loadConfig(base({ DATABASE_STATEMENT_TIMEOUT_MS: '800' })).databaseQueryTimeoutMs).toBe(1800);
    expect(() => loadConfig(base({ DATABASE_QUERY_TIMEOUT_MS: '5000' }))).toThrow(
      /DATABASE_QUERY_TIMEOUT_MS \(5000\) must be above DATABASE_STATEMENT_TIMEOUT_MS \(5000\)/,
    );
  });

  it.each([
    ['DATABASE_STATEMENT_TIMEOUT_MS', '0'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', 'soon'],
    ['MIGRATION_LOCK_TIMEOUT_S', '0'],
    ['REQUEST_TIMEOUT_S', '-1'],
    ['DATABASE_NAMED_STATEMENTS', 'yes'],
  ])('%s=%s stops the start, naming the variable', (name, value) => {
    expect(() => loadConfig(base({ [name]: value }))).toThrow(new RegExp(name));
  });

  it('DATABASE_DIRECT_URL must be a PostgreSQL URL (never echoed), and needs DATABASE_URL', () => {
    expect(() => loadConfig(base({ DATABASE_URL: DIRECT, DATABASE_DIRECT_URL: 'mysql://u:hunter2@x' }))).toThrow(
      /^DATABASE_DIRECT_URL must be a postgres:\/\/ or postgresql:\/\/ URL$/,
    );
    expect(() => loadConfig(base({ DATABASE_DIRECT_URL: DIRECT }))).toThrow(/DATABASE_DIRECT_URL needs DATABASE_URL/);
  });
});
