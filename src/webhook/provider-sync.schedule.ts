import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { providerSyncRuns } from '../common/metrics';
import { JobLeasesRepository } from './job-leases.repository';
import { ProviderSync } from './provider-sync';

const JOB = 'provider_sync';

/**
 * With PROVIDER_SYNC_INTERVAL_S set, runs the reconciliation that often, on one instance at a time: each
 * tick tries to take the job's lease row in PostgreSQL (job_leases); only the instance that gets it runs,
 * and a holder that dies frees it by expiry. Never blocks requests (a timer, not a request), and a failed
 * run is logged and tried again at the next tick; it never stops the service.
 */
@Injectable()
export class ProviderSyncSchedule implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ProviderSync');
  private readonly holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly leases: JobLeasesRepository,
    private readonly sync: ProviderSync,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap() {
    const interval = this.config.providerSyncIntervalS;
    if (!interval) return;
    this.timer = setInterval(() => void this.tick(), interval * 1000);
    this.timer.unref();
  }

  async onApplicationShutdown() {
    clearInterval(this.timer);
    await this.running;
  }

  /** One tick: run if this instance gets the lease (and is not still running the previous one). */
  async tick(): Promise<'ran' | 'skipped'> {
    if ((await this.start('schedule')) === 'busy') return 'skipped';
    await this.running;
    return 'ran';
  }

  /**
   * A run now, in the background (the operator console's "run now"), under the same lease as the schedule:
   * 'busy' when a run is under way here or on another instance.
   */
  async start(trigger: string): Promise<'started' | 'busy'> {
    if (this.running) return 'busy';
    // The lease outlives the longest run we expect; a longer run could overlap one other run, never corrupt.
    const leaseS = Math.max(2 * (this.config.providerSyncIntervalS ?? 0), 600);
    const taken = await this.leases.take(JOB, this.holder, leaseS).catch((err: Error) => {
      this.logger.error({ msg: 'provider sync: could not take the lease; trying at the next interval', err });
      return false;
    });
    if (!taken || this.running) return 'busy';
    this.running = this.runOnce(trigger).finally(() => (this.running = undefined));
    return 'started';
  }

  private async runOnce(trigger: string): Promise<void> {
    try {
      const summary = await this.sync.run(undefined, trigger);
      providerSyncRuns.inc({ outcome: 'ok' });
      this.logger.log({ msg: 'provider sync done', ...summary });
    } catch (err) {
      providerSyncRuns.inc({ outcome: 'failed' });
      this.logger.error({ msg: 'provider sync failed; trying again at the next interval', err });
    } finally {
      await this.leases.release(JOB, this.holder).catch(() => undefined);
    }
  }
}
