import { Injectable, Logger as NestLogger } from '@nestjs/common';
import { Logger, runMigrations, TaskList } from 'graphile-worker';
import { Pool } from 'pg';
import { ClosingClient } from './closing-client';

/**
 * The PostgreSQL job queue (graphile-worker 0.17, the last major that runs on Node 20; 0.18 needs Node 22): jobs are rows in
 * its own schema `graphile_worker`, taken with SELECT … FOR UPDATE SKIP LOCKED by any instance, so a job
 * survives restarts and runs on one instance at a time. Jobs are added with the SQL function
 * `graphile_worker.add_job(…)` inside our own transactions (through the app's pool, pooler or not); only
 * the worker itself, which LISTENs for new jobs, needs a session: its own small pool on DATABASE_DIRECT_URL.
 */

/**
 * Once a minute on one instance (graphile's cron): each user's minutely step (notifications' grace and override
 * expiries, lost jobs, old messages; meters' lost windows). The name is kept from when the queue was
 * notifications' alone: graphile's cron keeps its last run under it.
 */
export const MINUTELY_TASK = 'notifications_minutely';

/** What a module runs on the queue: its tasks, a step of the minutely job, and what to do once the worker runs. */
export interface QueueUser {
  tasks: TaskList;
  minutely?: () => Promise<void>;
  started?: () => Promise<void>;
}

/**
 * The queue's users (notifications' deliveries, billing's meter reports, plan migrations), each registered by its module at
 * init; the worker (job-queue.worker.ts) runs their tasks, and runs at all when any is registered.
 */
@Injectable()
export class JobQueueTasks {
  readonly users: QueueUser[] = [];

  register(user: QueueUser): void {
    this.users.push(user);
  }
}

/** Graphile's log lines, through Nest's logger: its routine chatter at debug level (or not at all). */
export function queueLogger(opts: { chatter: boolean } = { chatter: true }): Logger {
  const logger = new NestLogger('JobQueue');
  return new Logger(() => (level, message) => {
    if (level === 'error') logger.error(message);
    else if (level === 'warning') logger.warn(message);
    else if (opts.chatter) logger.debug(message);
  });
}

/**
 * Installs or upgrades the queue's schema. Called by migrate() under the migration lock (and so also for
 * the tests' template database), over PostgreSQL itself, like the migrations.
 */
export async function installJobQueueSchema(url: string): Promise<void> {
  await runMigrations({ connectionString: url, maxPoolSize: 1, logger: queueLogger({ chatter: false }) });
}

// The queue's own statements are short: one unanswered this long is a stalled database (the app's pool has
// DATABASE_QUERY_TIMEOUT_MS for the same reason). Without it, a stalled connection holds a worker for ever.
const QUEUE_QUERY_TIMEOUT_MS = 10_000;

/**
 * The worker's pool: sessions for its LISTEN and its job fetches. Errors of idle and of checked-out
 * connections are logged (an unhandled one would end the process); the pool replaces broken connections.
 */
export function jobQueuePool(url: string | undefined, max: number): Pool {
  const logger = new NestLogger('JobQueue');
  const pool = new Pool({
    connectionString: url,
    max,
    application_name: 'billing-licensing-service:notifications',
    connectionTimeoutMillis: 5000,
    query_timeout: QUEUE_QUERY_TIMEOUT_MS,
    Client: ClosingClient,
  });
  pool.on('error', (err) => logger.warn(`idle job-queue connection failed: ${err.message}`));
  pool.on('connect', (client) => client.on('error', (err) => logger.warn(`job-queue connection failed: ${err.message}`)));
  return pool;
}
