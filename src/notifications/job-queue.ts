import { Logger as NestLogger } from '@nestjs/common';
import { Logger, runMigrations } from 'graphile-worker';

/**
 * The PostgreSQL job queue (graphile-worker 0.16, the last major that runs on Node 20): jobs are rows in
 * its own schema `graphile_worker`, taken with SELECT … FOR UPDATE SKIP LOCKED by any instance, so a job
 * survives restarts and runs on one instance at a time. Jobs are added with the SQL function
 * `graphile_worker.add_job(…)` inside our own transactions (through the app's pool, pooler or not); only
 * the worker itself, which LISTENs for new jobs, needs a session: its own small pool on DATABASE_DIRECT_URL.
 */

/** Delivers one notification delivery (payload `{ delivery_id }`), job key `notification_delivery:<id>`. */
export const DELIVERY_TASK = 'notification_delivery';
/** Once a minute on one instance (graphile's cron): grace expiries, lost jobs, old messages. */
export const MINUTELY_TASK = 'notifications_minutely';

/** The job key of a delivery: one live job per delivery; adding it again replaces (or succeeds) the old one. */
export const deliveryJobKey = (deliveryId: string) => `${DELIVERY_TASK}:${deliveryId}`;

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
