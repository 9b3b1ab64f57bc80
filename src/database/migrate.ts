import { DataSource, QueryRunner } from 'typeorm';
import { installJobQueueSchema } from './job-queue';
import { typeOrmOptions } from './typeorm-options';

/**
 * The key of the session advisory lock migrations run under: `pg_advisory_lock(7236001)`. An operator
 * finds who is migrating in pg_locks (locktype 'advisory', objid 7236001).
 */
export const MIGRATION_LOCK = 7_236_001;

export interface MigrationOptions {
  /** How long to wait for another instance's migrations (MIGRATION_LOCK_TIMEOUT_S). */
  lockTimeoutS: number;
  log?: (message: string) => void;
}

// While waiting, how often the log says so again.
const STILL_WAITING_EVERY_MS = 30_000;

/**
 * Applies pending migrations over `url`, which must reach PostgreSQL itself (DATABASE_DIRECT_URL): the
 * lock is a session lock, which a pooler in transaction mode would leave behind on a pooled server
 * connection. Its own short-lived connections, without the app's statement and query timeouts: a
 * migration may take minutes, and so may waiting for another instance's.
 */
export async function migrate(url: string, opts: MigrationOptions): Promise<void> {
  const dataSource = await new DataSource({ ...typeOrmOptions({ url, poolSize: 2 }), entities: [] }).initialize();
  try {
    await runMigrations(dataSource, opts);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Runs pending migrations, then installs or upgrades the job queue's schema, while holding the migration
 * lock. When another instance holds it, says so and waits, up to `lockTimeoutS`, then fails naming the
 * lock and its holder.
 */
export async function runMigrations(dataSource: DataSource, opts: MigrationOptions): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await acquireLock(runner, opts);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      // The job queue's own schema (graphile-worker's migrations), under the same lock.
      await installJobQueueSchema((dataSource.options as { url: string }).url);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    await runner.release();
  }
}

async function acquireLock(runner: QueryRunner, { lockTimeoutS, log = () => undefined }: MigrationOptions): Promise<void> {
  const [{ locked }] = await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [MIGRATION_LOCK]);
  if (locked) return;
  const what = `pg_advisory_lock(${MIGRATION_LOCK})`;
  log(`another instance is applying migrations (${await lockHolder(runner)}): waiting up to ${lockTimeoutS} s for ${what}`);
  const started = Date.now();
  const reminder = setInterval(
    () => log(`still waiting for ${what} after ${Math.round((Date.now() - started) / 1000)} s`),
    STILL_WAITING_EVERY_MS,
  );
  try {
    // Session settings are fine here: this is a direct connection of its own, closed after the migrations.
    await runner.query(`SET lock_timeout = ${Math.floor(lockTimeoutS * 1000)}`);
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await runner.query('RESET lock_timeout');
  } catch (err) {
    if ((err as { code?: string }).code !== '55P03') throw err;
    throw new Error(
      `gave up after ${lockTimeoutS} s (MIGRATION_LOCK_TIMEOUT_S) waiting for ${what}, held by ` +
        `${await lockHolder(runner)}; if no instance is starting, end that session`,
      { cause: err },
    );
  } finally {
    clearInterval(reminder);
  }
  log(`${what} acquired after ${Math.round((Date.now() - started) / 100) / 10} s`);
}

/** Who holds the migration lock in this database: pid, application and since when. */
async function lockHolder(runner: QueryRunner): Promise<string> {
  const [row] = await runner.query(
    `SELECT l.pid, a.application_name, a.client_addr::text AS addr, a.backend_start
     FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MIGRATION_LOCK],
  );
  if (!row) return 'a session that has just released it';
  const app = row.application_name ? ` "${row.application_name}"` : '';
  const since = row.backend_start ? `, connected since ${new Date(row.backend_start).toISOString()}` : '';
  return `backend pid ${row.pid}${app}${row.addr ? ` from ${row.addr}` : ''}${since}`;
}
