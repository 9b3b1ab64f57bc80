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

export interface TestDatabase {
  url: string;
  name: string;
  /** Drops it. */
  drop: () => Promise<void>;
  /**
   * Empties it for the next `createTestDatabase()` of this Jest file: every table but the migrations'
   * truncated, the connections still open closed (as DROP … WITH (FORCE) would). Much cheaper than copying
   * the template again (~0.45 s on the 2-core machine, most of an app's start). Dropped instead when that
   * fails; global teardown drops what is left.
   */
  recycle: () => Promise<void>;
}

// This Jest file's emptied databases (module state: a test file, or a group of them, has its own).
const spare: string[] = [];

const EMPTY_SQL = `
  DO $$ BEGIN
    EXECUTE (SELECT 'TRUNCATE ' || string_agg(format('%I.%I', schemaname, tablename), ', ') || ' RESTART IDENTITY CASCADE'
             FROM pg_tables WHERE schemaname IN ('public', 'graphile_worker') AND tablename <> 'migrations');
  END $$`;

/**
 * A database for one test app, as migrated as the template: an emptied one this file used before, or a
 * fresh copy of the template (`CREATE DATABASE … TEMPLATE`). Test files never see each other's rows, and
 * nobody pays for migrations twice.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  let name = spare.pop();
  if (!name) {
    name = `billing_t_${process.env.TEST_RUN_ID}_${randomBytes(5).toString('hex')}`;
    await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`);
  }
  const drop = () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  return { name, url: serverUrl(name), drop, recycle: () => recycle(name!, drop) };
}

async function recycle(name: string, drop: () => Promise<void>): Promise<void> {
  const client = new Client({ connectionString: serverUrl(name), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query(`SET lock_timeout = '2s'`);
    await client.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    await client.query(EMPTY_SQL);
    spare.push(name);
  } catch {
    await drop();
  } finally {
    await client.end().catch(() => undefined);
  }
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
