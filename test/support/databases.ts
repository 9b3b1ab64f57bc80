import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { MIGRATION_LOCK } from '../../src/database/migrate';

/** The server the tests use (DATABASE_URL, or the embedded one global-setup started). */
export function serverUrl(database = 'postgres'): string {
  const base = process.env.TEST_DATABASE_SERVER_URL;
  if (!base) throw new Error('global-setup did not run: TEST_DATABASE_SERVER_URL is unset');
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A fresh database for one test file, copied from the migrated template: test files never see each
 * other's rows, and nobody pays for migrations twice.
 */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `billing_t_${process.env.TEST_RUN_ID}_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`);
  return {
    name,
    url: serverUrl(name),
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** The application_name of each session waiting for the migration lock in `client`'s database. */
export async function migrationLockWaiters(client: Client): Promise<string[]> {
  const { rows } = await client.query(
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = $1 AND NOT l.granted
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MIGRATION_LOCK],
  );
  return rows.map((r) => r.application_name);
}
