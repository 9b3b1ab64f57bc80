import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { postSignedEvent } from './provider-events';
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

  /** In order; stops at the first failure so that a retry resumes where it stopped. */
  async deliverPending(sourceId: string): Promise<DeliveryOutcome> {
    for (const event of await this.store.pendingEvents(sourceId)) {
      const error = await this.deliver(JSON.stringify(event.payload));
      if (error) {
        this.logger.warn(`event ${event.id} (${event.payload.type}) not delivered: ${error}`);
        await this.store.markFailed(event.seq, error);
        return { ok: false, error };
      }
      await this.store.markDelivered(event.seq);
    }
    return { ok: true };
  }

  /** Returns why the delivery failed, or undefined when the endpoint acknowledged it (2xx). */
  private async deliver(body: string): Promise<string | undefined> {
    try {
      const res = await postSignedEvent(this.urls.webhook(), body, this.config.webhookSecrets[0]);
      if (res.status >= 200 && res.status < 300) return undefined;
      return `the webhook endpoint answered ${res.status}: ${res.body.slice(0, 300)}`;
    } catch (err) {
      return `the webhook endpoint could not be reached: ${(err as Error).message}`;
    }
  }
}
