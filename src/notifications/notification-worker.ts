import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { run, Runner } from 'graphile-worker';
import { Pool } from 'pg';
import { AppConfig } from '../config/app-config';
import { DELIVERY_TASK, MINUTELY_TASK, queueLogger } from './job-queue';
import { NotificationDeliveryService } from './notification-delivery.service';
import { NotificationsService } from './notifications.service';

// Attempts in flight per instance: each is mostly waiting on a receiver (at most 10 s).
const CONCURRENCY = 4;
// Retries are due at their run_at; the worker looks for due jobs this often (new jobs arrive by NOTIFY at once).
const POLL_INTERVAL_MS = 1000;

/**
 * The queue's worker, in every instance of the HTTP service (not in the CLI, whose application context has
 * no HTTP adapter), when NOTIFY_URLS is set. It LISTENs for new jobs, so it has its own small pool on
 * DATABASE_DIRECT_URL (a pooler in transaction mode cannot keep a LISTEN); the tasks themselves use the
 * app's pool. Stopped before the app's pool closes: attempts in flight finish (or are interrupted after
 * 5 s and retried later), and jobs not started stay queued for any instance.
 */
@Injectable()
export class NotificationWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Notifications');
  private pool?: Pool;
  private runner?: Runner;

  constructor(
    private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly deliveries: NotificationDeliveryService,
    private readonly notifications: NotificationsService,
  ) {}

  async onApplicationBootstrap() {
    if (!this.notifications.enabled || !this.adapterHost.httpAdapter) return;
    this.pool = new Pool({
      connectionString: this.config.databaseDirectUrl ?? this.config.databaseUrl,
      max: CONCURRENCY + 1,
      application_name: 'billing-licensing-service:notifications',
      connectionTimeoutMillis: 5000,
    });
    this.pool.on('error', (err) => this.logger.warn(`idle job-queue connection failed: ${err.message}`));
    this.runner = await run({
      pgPool: this.pool,
      concurrency: CONCURRENCY,
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger: queueLogger(),
      taskList: {
        [DELIVERY_TASK]: (payload, helpers) => this.deliveries.attempt((payload as { delivery_id: string }).delivery_id, helpers.abortSignal),
        [MINUTELY_TASK]: () => this.notifications.minutely(),
      },
      // graphile's cron schedules each minute once across all instances; a missed minute is not backfilled.
      crontab: `* * * * * ${MINUTELY_TASK} ?max=1`,
    });
    this.logger.log(`notifications: sending to ${this.config.notifyUrls.length} URL(s)`);
  }

  async beforeApplicationShutdown() {
    await this.runner?.stop().catch((err: Error) => this.logger.error({ msg: 'job queue: stopping failed', err }));
    await this.pool?.end().catch(() => undefined);
    this.runner = undefined;
    this.pool = undefined;
  }
}
