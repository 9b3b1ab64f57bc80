import { Injectable, Logger } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { AppConfig } from '../config/app-config';
import { notificationDeliveries } from '../common/metrics';
import { DeliveryAttemptRow, NotificationDeliveriesRepository } from './notification-deliveries.repository';

/** Per attempt: no answer (headers) within this long is a failure. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
const FIRST_PHASE_S = 10 * 60;
const GIVE_UP_AFTER_S = 24 * 3600;
const MAX_LATE_DELAY_S = 3 * 3600;

/**
 * How long to wait after a failed attempt, from the age of the message (or of its last manual retry), or
 * null to give up. During the first 10 minutes: as long as it has existed, between 1 and 60 s, which
 * doubles the wait at each failure (1, 2, 4, … 32, 60, 60 … s). After that, exponential in time: half its
 * age (each attempt at 1.5 × the age of the previous one), at most 3 h apart. After 24 h: failed.
 */
export function retryDelayS(ageS: number): number | null {
  if (ageS >= GIVE_UP_AFTER_S) return null;
  if (ageS < FIRST_PHASE_S) return Math.min(Math.max(ageS, 1), 60);
  return Math.min(ageS / 2, MAX_LATE_DELAY_S);
}

/** A URL fit for logs and the CLI: no credentials, no query (either may carry a token). */
export function displayUrl(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
}

/**
 * One attempt of one delivery (a job of the queue): sign with NOTIFY_SECRET per Standard Webhooks, POST,
 * and record the outcome. A failure schedules the next attempt itself, as a new job with the delivery's
 * key and its own run_at, in the statement that records it (the queue's built-in backoff waits too long
 * early on and gives up too soon).
 */
@Injectable()
export class NotificationDeliveryService {
  private readonly logger = new Logger('Notifications');
  private readonly signer?: Webhook;
  /** ATTEMPT_TIMEOUT_MS; a test may shorten it to show what a receiver that never answers gets. */
  attemptTimeoutMs = ATTEMPT_TIMEOUT_MS;

  constructor(
    private readonly deliveries: NotificationDeliveriesRepository,
    private readonly config: AppConfig,
  ) {
    if (config.notifySecret) this.signer = new Webhook(config.notifySecret);
  }

  async attempt(deliveryId: string, abort?: AbortSignal): Promise<void> {
    const d = await this.deliveries.findForAttempt(deliveryId);
    // Delivered, given up, deleted with its organisation, or a newer job holds its schedule: nothing to do.
    if (!d || d.status !== 'pending' || d.notDue) return;
    if (!this.signer || !this.config.notifyUrls.includes(d.url)) {
      return this.failed(deliveryId, d, 'the URL is no longer in NOTIFY_URLS', null);
    }
    const started = Date.now();
    const error = await this.post(d.url, d.messageId, d.body, abort);
    if (error === undefined) {
      await this.deliveries.markDelivered(deliveryId);
      notificationDeliveries.inc({ outcome: 'delivered' });
      return;
    }
    await this.failed(deliveryId, d, error, retryDelayS(d.ageS + (Date.now() - started) / 1000));
  }

  private async failed(deliveryId: string, d: DeliveryAttemptRow, error: string, delayS: number | null) {
    await this.deliveries.recordFailedAttempt(deliveryId, error, delayS);
    notificationDeliveries.inc({ outcome: delayS === null ? 'gave_up' : 'failed_attempt' });
    const line = { msg: 'notification delivery failed', webhook_id: d.messageId, url: displayUrl(d.url), error };
    if (delayS === null) this.logger.error({ ...line, msg: 'notification delivery given up (notifications:retry resends it)' });
    else this.logger.warn({ ...line, retry_in_s: Math.round(delayS) });
  }

  /** One POST; undefined on a 2xx, else why not (never the response body, never a secret). */
  private async post(url: string, id: string, body: string, abort?: AbortSignal): Promise<string | undefined> {
    const now = new Date();
    const signals = [AbortSignal.timeout(this.attemptTimeoutMs), ...(abort ? [abort] : [])];
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'billing-licensing-service',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': this.signer!.sign(id, now, body),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.any(signals),
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status >= 200 && res.status < 300 ? undefined : `HTTP ${res.status}`;
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === 'TimeoutError') return `no answer within ${this.attemptTimeoutMs / 1000} s`;
      if (e.name === 'AbortError') return 'interrupted by a shutdown';
      return `network error: ${e.cause?.code ?? e.name}`;
    }
  }
}
