import { join } from 'node:path';
import * as pg from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { trackPool } from '../common/metrics';
import { ClosingClient } from './closing-client';
import { holdsTransactionConnection, SecondConnectionRefused } from './held-connection';

/**
 * node-postgres, with every pool it creates reported to the pool gauges of /metrics while it is open, and,
 * when `refuseSecondConnection` is set, refusing a transaction's work a second connection (held-connection.ts).
 * Handed to TypeORM through its `driver` option, so nothing has to reach into the driver for its pool.
 */
const pgWithPoolMetrics = {
  ...pg,
  Pool: class TrackedPool extends pg.Pool {
    private readonly untrack = trackPool(this);
    private readonly refuseSecondConnection: boolean;

    constructor(config?: pg.PoolConfig & Pick<PoolOptions, 'refuseSecondConnection'>) {
      super(config);
      this.refuseSecondConnection = config?.refuseSecondConnection === true;
    }

    /** Refuses, when asked to, a connection for a transaction's work that holds one already (held-connection.ts). */
    override connect(): Promise<pg.PoolClient>;
    override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
    override connect(
      callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
    ): Promise<pg.PoolClient> | void {
      if (this.refuseSecondConnection && holdsTransactionConnection()) {
        const err = new SecondConnectionRefused();
        if (!callback) return Promise.reject(err);
        return void process.nextTick(() => callback(err, undefined, () => undefined));
      }
      return callback ? super.connect(callback) : super.connect();
    }

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
  /**
   * Server side, on every statement of the pool's connections (0: none, also overriding a role's default:
   * migrations may legitimately run long). See `poolStatementTimeoutMs`.
   */
  statementTimeoutMs?: number;
  /**
   * `url` is a pooler that takes no startup parameter (spec §1: PgBouncer as its operators leave it refuses
   * any but `extra_float_digits`). The connections then send none: the limit is SET LOCAL by each transaction
   * (transaction.ts), and statements outside one have the role's own statement_timeout (docs/operations.md).
   */
  throughPooler?: boolean;
  onPoolError?: (err: Error) => void;
  /**
   * Fail at once, rather than wait, when a transaction's work asks the pool for a second connection (the
   * data layer's rule broken: held-connection.ts). The app sets it outside production, so tests and
   * development show such a path on its first run instead of under a burst.
   */
  refuseSecondConnection?: boolean;
}

/** What TypeORM hands to pg.Pool, and the pool to each connection: node-postgres's own client options. */
interface PoolOptions {
  statement_timeout?: number;
  options?: string;
  /**
   * The limit each transaction sets for itself (SET LOCAL), unless its connections were seen to start with it
   * (`trustStartupStatementTimeout`). Not node-postgres's.
   */
  transactionStatementTimeoutMs: number;
  query_timeout?: number;
  idleTimeoutMillis: number;
  Client: typeof ClosingClient;
  refuseSecondConnection?: boolean;
}

/**
 * What every session of the service runs with besides its time limit. `jit = off`: the hot statements (the usage
 * write above all: a recursive fold over functions the planner guesses a thousand rows from) are estimated above
 * PostgreSQL's `jit_above_cost`, so with JIT on (PostgreSQL's default wherever it is built with LLVM) each
 * execution compiled itself first: ~250 ms of database CPU for a report that runs in ~1 ms (measured with
 * log_executor_stats; docs/performance.md). Behind a pooler the operator sets the same on the role
 * (docs/operations.md); the start warns when a setting differs (database.module.ts).
 */
export const SESSION_SETTINGS = { jit: 'off' } as const;

/** `-c name=value …`: the startup `options` parameter of a direct connection. */
function sessionOptions(more: Record<string, string>): string {
  return Object.entries({ ...SESSION_SETTINGS, ...more })
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
}

/**
 * One set of options for the app, the tests and the migration CLI (ormconfig.ts). Without timeouts
 * (the migration CLI, `migrate`) a statement may run as long as it needs.
 */
export function typeOrmOptions(opts: DatabaseOptions): DataSourceOptions {
  const src = join(__dirname, '..');
  const statementTimeoutMs = Math.floor(opts.statementTimeoutMs ?? 0);
  const extra: PoolOptions = {
    // On PostgreSQL itself, startup parameters of every connection, at no cost per statement: the session's
    // statement_timeout, for every statement, in or out of a transaction; and no JIT compilation (SESSION_SETTINGS).
    // A pooler refuses them (spec §1): behind one, the role's settings and transaction.ts's SET LOCAL take their place.
    ...(opts.throughPooler
      ? {}
      : { ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}), options: sessionOptions(statementTimeoutMs > 0 ? {} : { statement_timeout: '0' }) }),
    transactionStatementTimeoutMs: statementTimeoutMs,
    query_timeout: opts.queryTimeoutMs || undefined,
    idleTimeoutMillis: 30_000,
    Client: ClosingClient,
    refuseSecondConnection: opts.refuseSecondConnection,
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
    extra,
    // A connection that drops while idle must never crash the process; the pool replaces it.
    poolErrorHandler: opts.onPoolError ?? (() => undefined),
  };
}

/** Pools whose connections were seen to start with the statement time limit (`trustStartupStatementTimeout`). */
const limitedAtStartup = new WeakSet<DataSource>();

/**
 * Whether `db`'s connections start with the statement time limit, checked once on one of them (every connection
 * of the pool sends the same startup parameters): then `db`'s transactions need not set it again, a round trip
 * less for each (measured: ~5 % of a webhook's server CPU, docs/performance.md). A pool sends the limit as a startup
 * parameter only on a direct connection; one that a pooler dropped without a word (a pooler whose operators made it
 * ignore `statement_timeout` and `options`) shows another, and its transactions go on setting it.
 */
export async function trustStartupStatementTimeout(db: DataSource): Promise<boolean> {
  const sent = (db.options.extra as PoolOptions | undefined)?.statement_timeout;
  if (!sent) return false;
  const [{ ms }] = await db.query(`SELECT setting::int AS ms FROM pg_settings WHERE name = 'statement_timeout'`);
  if (ms !== sent) return false;
  limitedAtStartup.add(db);
  return true;
}

/** The statement time limit `db`'s transactions set for themselves (0: none, or their connections start with it). */
export function poolStatementTimeoutMs(db: DataSource): number {
  if (limitedAtStartup.has(db)) return 0;
  return (db.options.extra as PoolOptions | undefined)?.transactionStatementTimeoutMs ?? 0;
}

/** Whether `db`'s pool refuses a transaction's work a second connection (held-connection.ts). */
export function poolRefusesSecondConnection(db: DataSource): boolean {
  return (db.options.extra as PoolOptions | undefined)?.refuseSecondConnection === true;
}
