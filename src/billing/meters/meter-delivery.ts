import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { MeteredMetric } from '../../config/tiers';
import { JobQueueTasks } from '../../database/job-queue';
import { meterEvents, trackMeterWindows } from '../../common/metrics';
import { PaymentProvider, PaymentProviderError } from '../../provider/payment-provider.port';
import { METER_EVENT_MAX_AGE_S } from '../../provider/meter-rules';
import { METER_FLUSH_TASK, METER_WINDOW_TASK, meterIdentifier, MetersRepository, WindowKey } from './meters.repository';

/** Windows closed per flush run (the rest wait for the next run, one window length later). */
const FLUSH_BATCH = 500;
/** How long closing an organisation's windows waits for its usage writes in flight (see closeEnded). */
const CLOSE_LOCK_WAIT_MS = 500;
/** The longest wait between two attempts of a window: after an outage, delivery resumes within this. */
const MAX_RETRY_DELAY_S = 600;
/**
 * Delivered windows are kept as long as the provider takes a meter event dated in them (35 days), and
 * while their organisation's current period (which usage:meters sums) includes them.
 */
export const METER_WINDOW_RETENTION_S = METER_EVENT_MAX_AGE_S;
/** The minute of each hour (UTC) in which the minutely sweep also prunes: once an hour is enough. */
const PRUNE_MINUTE = 17;

/**
 * Seconds until a window's next attempt after its `attempt`-th failed: doubling from about 1 s up to about 10
 * minutes, give or take a fifth (so that windows failed together do not come back together, as the provider
 * asks), and never sooner than the provider's Retry-After.
 */
export function meterRetryDelayS(attempt: number, retryAfterS?: number): number {
  const backoff = Math.min(2 ** Math.min(attempt - 1, 20), MAX_RETRY_DELAY_S) * (0.8 + 0.4 * Math.random());
  return Math.max(backoff, retryAfterS ?? 0);
}

/**
 * Provider meters (spec §13) on the job queue: a flush job closes the windows that ended and queues one
 * delivery job per window; a delivery sends the window's meter event through the PaymentProvider port and
 * records the outcome. Any instance runs either; a window is attempted by one at a time (a lease), and its
 * identifier makes the provider keep one event even if an attempt's answer was lost.
 */
@Injectable()
export class MeterDelivery implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Meters');
  private untrack?: () => void;
  /** meterRetryDelayS; a test may shorten the waits to show a long outage without waiting it out. */
  retryDelayS = meterRetryDelayS;

  constructor(
    private readonly windows: MetersRepository,
    private readonly provider: PaymentProvider,
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
  ) {}

  get enabled(): boolean {
    return Object.keys(this.config.providerMeters).length > 0;
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.untrack = trackMeterWindows(() => this.windows.undelivered());
    this.queue.register({
      tasks: {
        [METER_FLUSH_TASK]: async () => void (await this.flush()),
        [METER_WINDOW_TASK]: (payload) => this.attempt(windowKey(payload as WindowPayload)),
      },
      minutely: () => this.sweep(),
      // The flush job exists once for all instances (its job key): the first start adds it, the others keep it.
      started: () => this.windows.scheduleFlush(new Date(), 'preserve_run_at'),
    });
  }

  onModuleDestroy(): void {
    this.untrack?.();
  }

  /**
   * Closes the windows that have ended (each organisation's under its lock: see meters.repository.ts) and
   * queues their delivery, then runs again when the next window ends. Answers how many it closed.
   */
  async flush(): Promise<number> {
    let closed = 0;
    for (const { organisationId, metric } of await this.windows.endedOpenWindows(FLUSH_BATCH)) {
      closed += await this.windows.closeEnded(organisationId, metric, CLOSE_LOCK_WAIT_MS).catch((err: Error) => {
        this.logger.warn({ msg: 'meters: closing windows waited too long for usage writes; the next flush tries again', organisation_id: organisationId, metric, error: err.message });
        return 0;
      });
    }
    const flushS = this.config.meterFlushS;
    // Just after the next window's end (the database's clock decides; a second's margin for the difference).
    await this.windows.scheduleFlush(new Date((Math.floor(Date.now() / 1000 / flushS) + 1) * flushS * 1000 + 1000), 'replace');
    return closed;
  }

  /** One attempt of a window's meter event, when it is pending, due and not under way elsewhere. */
  async attempt(k: WindowKey): Promise<void> {
    const w = await this.windows.claim(k);
    if (!w) return;
    const eventName = this.config.providerMeters[k.metric as MeteredMetric];
    if (!eventName) return this.refused(k, `PAYPROVIDER_METER_${k.metric.toUpperCase()} is no longer set`);
    try {
      const outcome = await this.provider.reportMeterEvent({
        eventName,
        customerId: w.customerId,
        value: w.value,
        identifier: meterIdentifier(k),
        // The window's last second: its usage happened by then, and never before the customer it is billed to existed.
        timestamp: w.windowEnd - 1,
      });
      await this.windows.markDelivered(k);
      meterEvents.inc({ outcome: outcome === 'created' ? 'delivered' : 'duplicate' });
    } catch (err) {
      const e = err instanceof PaymentProviderError ? err : new PaymentProviderError('unavailable', (err as Error).message);
      if (e.kind === 'rejected' || e.kind === 'not_found') return this.refused(k, e.message);
      const delayS = this.retryDelayS(w.attempts, e.retryAfterS);
      await this.windows.recordRetry(k, `${e.kind}: ${e.message}`, delayS);
      meterEvents.inc({ outcome: 'retried' });
      this.logger.warn({ msg: 'meter event not delivered; retrying', identifier: meterIdentifier(k), error: e.message, retry_in_s: delayS });
    }
  }

  private async refused(k: WindowKey, reason: string): Promise<void> {
    await this.windows.markFailed(k, reason);
    meterEvents.inc({ outcome: 'failed' });
    this.logger.error({ msg: 'meter event refused for good; the window is kept as failed', identifier: meterIdentifier(k), error: reason });
  }

  /**
   * Once a minute: windows whose job was lost get a new one, and a flush that fell behind (its job failing
   * while the database was away, or lost) is brought forward. Once an hour, old delivered windows are pruned.
   */
  async sweep(now = new Date()): Promise<void> {
    await this.windows.requeueLost();
    const behind = (await this.windows.endedOpenWindows(1)).length > 0;
    await this.windows.scheduleFlush(new Date(), behind ? 'replace' : 'preserve_run_at');
    if (now.getUTCMinutes() === PRUNE_MINUTE) await this.prune();
  }

  /**
   * Deletes the delivered windows older than METER_WINDOW_RETENTION_S that no longer count in their
   * organisation's current period; never an open, pending or failed one. Answers how many.
   */
  async prune(): Promise<number> {
    const pruned = await this.windows.pruneDelivered(METER_WINDOW_RETENTION_S);
    if (pruned) this.logger.log({ msg: 'meters: pruned delivered windows', windows: pruned });
    return pruned;
  }
}

interface WindowPayload {
  organisation_id: string;
  metric: string;
  window_start: number | string;
}

const windowKey = (p: WindowPayload): WindowKey => ({ organisationId: p.organisation_id, metric: p.metric, windowStart: Number(p.window_start) });
