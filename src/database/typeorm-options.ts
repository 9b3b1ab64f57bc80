import { join } from 'node:path';
import * as pg from 'pg';
import { DataSourceOptions } from 'typeorm';
import { trackPool } from '../ops/metrics';
import { guardedClient, StatementGuardOptions } from './statement-guard';

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

export interface DatabaseOptions {
  url: string;
  poolSize?: number;
  /** Client side: a query unanswered after this fails (0: never). A backstop above `statementTimeoutMs`. */
  queryTimeoutMs?: number;
  /** Server side, on every statement, through SET LOCAL (0: none). See statement-guard.ts. */
  statementTimeoutMs?: number;
  /** False behind a pooler in transaction mode: statements are sent unnamed. */
  namedStatements?: boolean;
  onPoolError?: (err: Error) => void;
}

/**
 * One set of options for the app, the tests and the migration CLI (ormconfig.ts). Without timeouts
 * (the migration CLI, `migrate`) a statement may run as long as it needs.
 */
export function typeOrmOptions(opts: DatabaseOptions): DataSourceOptions {
  const src = join(__dirname, '..');
  const guard: StatementGuardOptions = {
    statementTimeoutMs: opts.statementTimeoutMs ?? 0,
    namedStatements: opts.namedStatements ?? true,
  };
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
      // pg.Pool builds its connections from this class: the statement timeout and the statement names.
      Client: guardedClient(guard),
      query_timeout: opts.queryTimeoutMs || undefined,
      idleTimeoutMillis: 30_000,
    },
    // A connection that drops while idle must never crash the process; the pool replaces it.
    poolErrorHandler: opts.onPoolError ?? (() => undefined),
  };
}
