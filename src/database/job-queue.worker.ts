import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { run, Runner } from 'graphile-worker';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'pg';
import { jobQueueRestarts } from '../common/metrics';
import { AppConfig } from '../config/app-config';
import { JobQueueTasks, jobQueuePool, MINUTELY_TASK, queueLogger } from './job-queue';

// Attempts in flight per instance: each is mostly waiting on a receiver (at most 10 s).
const CONCURRENCY = 4;
// Retries are due at their run_at; the worker looks for due jobs this often (new jobs arrive by NOTIFY at once).
const POLL_INTERVAL_MS = 1000;
// Waits between attempts to restart a stopped runner: 1 s, 2 s, 4 s … then every 30 s.
const restartDelayMs = (attempt: number) => Math.min(1000 * 2 ** (attempt - 1), 30_000);

/**
 * The queue's worker, in every instance of the HTTP service (not in the CLI, whose application context has
 * no HTTP adapter), when a module registered tasks (JobQueueTasks: notifications with NOTIFY_URLS set, meters
 * with a provider meter configured, plan migrations always). It LISTENs for new jobs, so it has its own small pool on
 * DATABASE_DIRECT_URL (a pooler in transaction mode cannot keep a LISTEN); the tasks themselves use the
 * app's pool. Stopped before the app's pool closes: attempts in flight finish (or are interrupted after
 * 5 s and retried later), and jobs not started stay queued for any instance.
 *
 * A database outage never takes the process down: graphile-worker retries its LISTEN, its job polling and
 * its cron by itself; what it cannot retry (a job whose outcome could not be recorded) stops its runner,
 * and this class starts a new one once the database answers again, the job unlocked to run again.
 */
@Injectable()
export class JobQueueWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('JobQueue');
  private readonly shutdown = new AbortController();
  private pool?: Pool;
  private runner?: Runner;
  private restarting?: Promise<void>;
  /** Stopped worker pools (graphile's lock holders): a job one could not release stays locked by it. */
  private readonly stoppedPools = new Set<string>();

  constructor(
    private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly queue: JobQueueTasks,
  ) {}

  async onApplicationBootstrap() {
    if (!this.queue.users.length || !this.adapterHost.httpAdapter) return;
    this.pool = jobQueuePool(this.config.databaseDirectUrl ?? this.config.databaseUrl, CONCURRENCY + 1);
    await this.start(this.pool);
    for (const user of this.queue.users) await user.started?.();
  }

  /** The minutely job: each user's step, each on its own. */
  private async minutely(): Promise<void> {
    for (const user of this.queue.users) {
      await user.minutely?.().catch((err: Error) => this.logger.error({ msg: 'job queue: a minutely step failed; trying again in a minute', err }));
    }
  }

  async beforeApplicationShutdown() {
    this.shutdown.abort();
    await this.restarting;
    await this.runner?.stop().catch((err: Error) => this.logger.error({ msg: 'job queue: stopping failed', err }));
    await this.pool?.end().catch(() => undefined);
    this.runner = undefined;
    this.pool = undefined;
  }

  private async start(pool: Pool): Promise<void> {
    const runner = await run({
      pgPool: pool,
      concurrency: CONCURRENCY,
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger: queueLogger(),
      // Unbatched (the default), a job's outcome that cannot be written is a promise nobody handles, which ends
      // the process; batched, the failure stops the worker pool (and so the runner), which is restarted below.
      preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      taskList: { ...Object.assign({}, ...this.queue.users.map((user) => user.tasks)), [MINUTELY_TASK]: () => this.minutely() },
      // graphile's cron schedules each minute once across all instances; a missed minute is not backfilled.
      crontab: `* * * * * ${MINUTELY_TASK} ?max=1`,
    });
    this.runner = runner;
    runner.events.on('pool:release', ({ workerPool }) => this.stoppedPools.add(workerPool.id));
    // Settles only when the runner stopped: by us (shutdown, restart) or for good on an error of its own.
    runner.promise.then(
      () => this.restartIfLost(runner, 'stopped'),
      (err: Error) => this.restartIfLost(runner, `stopped on an error: ${err.message}`),
    );
  }

  private restartIfLost(runner: Runner, why: string): void {
    if (this.runner !== runner || this.shutdown.signal.aborted) return;
    if (this.restarting) return void this.restarting.then(() => this.restartIfLost(runner, why));
    this.runner = undefined;
    this.logger.error(`job queue ${why}; restarting it once the database answers`);
    this.restarting = this.restart(runner).finally(() => (this.restarting = undefined));
  }

  private async restart(old: Runner): Promise<void> {
    await old.stop().catch(() => undefined); // already stopped, in most cases
    for (let attempt = 1; ; attempt++) {
      try {
        await sleep(restartDelayMs(attempt), undefined, { signal: this.shutdown.signal });
        // A job the stopped pool could not release stays locked by it for 4 hours (graphile's limit); now it is free.
        await this.pool!.query(`SELECT graphile_worker.force_unlock_workers($1::text[])`, [[...this.stoppedPools]]);
        this.stoppedPools.clear();
        await this.start(this.pool!);
        jobQueueRestarts.inc();
        this.logger.log(`job queue restarted (attempt ${attempt})`);
        return;
      } catch (err) {
        if (this.shutdown.signal.aborted) return;
        this.logger.warn(`job queue: restart attempt ${attempt} failed (${(err as Error).message}); trying again`);
      }
    }
  }
}
