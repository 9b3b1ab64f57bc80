import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { postSignedEvent } from './provider-events';
import { PendingEvent } from './sandbox.repository';
import { SandboxStore } from './sandbox.store';
import { SandboxUrls } from './sandbox-urls';

export type DeliveryOutcome = { ok: true } | { ok: false; error: string };

/**
 * Delivers the sandbox's pending events to our own webhook endpoint, signed with the first configured
 * webhook secret, exactly as the provider would: the signature guard and handlers see real traffic.
 */
@Injectable()
export class SandboxDelivery {
  private readonly logger = new Logger('SandboxProvider');

  constructor(
    private readonly store: SandboxStore,
    private readonly urls: SandboxUrls,
    private readonly config: AppConfig,
  ) {}

  /** Deliveries under way per source: one source's events go out one delivery at a time, in order. */
  private readonly running = new Map<string, Promise<unknown>>();

  /**
   * Delivers in the background what a change made through the port left pending (the provider's events follow its
   * answer). A failure stays pending for the next delivery of that source (or provider:sync).
   */
  deliverLater(sourceId: string): void {
    this.deliverPending(sourceId).catch((err) => this.logger.warn(`events of ${sourceId} not delivered: ${(err as Error).message}`));
  }

  /**
   * In order, to our own webhook endpoint (or `url`: the CLI's `--url`), after any delivery of the same source
   * under way in this process; stops at the first failure so that a retry resumes where it stopped.
   */
  deliverPending(sourceId: string, url = this.urls.webhook(), delivered?: (event: PendingEvent) => void): Promise<DeliveryOutcome> {
    const next = (this.running.get(sourceId) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.deliverNow(sourceId, url, delivered));
    this.running.set(sourceId, next);
    void next.finally(() => this.running.get(sourceId) === next && this.running.delete(sourceId)).catch(() => undefined);
    return next;
  }

  private async deliverNow(sourceId: string, url: string, delivered?: (event: PendingEvent) => void): Promise<DeliveryOutcome> {
    for (const event of await this.store.pendingEvents(sourceId)) {
      const error = await this.deliver(url, JSON.stringify(event.payload));
      if (error) {
        this.logger.warn(`event ${event.id} (${event.payload.type}) not delivered: ${error}`);
        await this.store.markFailed(event.seq, error);
        return { ok: false, error };
      }
      await this.store.markDelivered(event.seq);
      delivered?.(event);
    }
    return { ok: true };
  }

  /** Returns why the delivery failed, or undefined when the endpoint acknowledged it (2xx). */
  private async deliver(url: string, body: string): Promise<string | undefined> {
    try {
      const res = await postSignedEvent(url, body, this.config.webhookSecrets[0]);
      if (res.status >= 200 && res.status < 300) return undefined;
      return `the webhook endpoint answered ${res.status}: ${res.body.slice(0, 300)}`;
    } catch (err) {
      return `the webhook endpoint could not be reached: ${(err as Error).message}`;
    }
  }
}
