import { join } from 'node:path';
import * as pg from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { trackPool } from '../ops/metrics';

/**
 * node-postgres, with every pool it creates reported to the pool gauges of /metrics while it is open.
 * Handed to TypeORM through its `driver` option, so nothing has to reach into the driver for its pool.
 */
const pgWithPoolMetrics = {
  ...pg,
  Pool: class TrackedPool extends pg.Pool {
    private readonly untrack = trackPool(this);

    override end(): Promise<void>;
    override end(callback: () => void): void;
    override end(callback?: () => void): Promise<void> | void {
      this.untrack();
      return callback ? super.end(callback) : super.end();
    }
  },
};

/** One set of options for the app, the tests and the migration CLI (ormconfig.ts). */
export function typeOrmOptions(opts: { url: string; poolSize?: number; queryTimeoutMs?: number; onPoolError?: (err: Error) => void }): DataSourceOptions {
  const src = join(__dirname, '..');
  return {
    type: 'postgres',
    driver: pgWithPoolMetrics,
    url: opts.url,
    entities: [join(src, '**', '*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    synchronize: false,
    // uuid keys default to gen_random_uuid() (built into PostgreSQL 13+), in the migrations and in what
    // migration:generate writes; nothing installs an extension: a migration creates what it needs.
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    // bigint counters come back as numbers; every value we store fits in 2^53.
    parseInt8: true,
    poolSize: opts.poolSize ?? 10,
    // Fail fast when the database is unreachable rather than queueing requests for ever.
    connectTimeoutMS: 3000,
    applicationName: 'billing-licensing-service',
    extra: {
      query_timeout: opts.queryTimeoutMs ?? 5000,
      idleTimeoutMillis: 30_000,
    },
    // A connection that drops while idle must never crash the process; the pool replaces it.
    poolErrorHandler: opts.onPoolError ?? (() => undefined),
  };
}

// Arbitrary constant: serialises migrations when several instances start at once.
const MIGRATION_LOCK = 7_236_001;

/** Applies pending migrations while holding an advisory lock, so concurrent starts don't race. */
export async function runMigrations(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}
