import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { PaymentProviderError } from '../provider/payment-provider.port';
import { AwaitedChange, ExpectedSubscription } from './subscription-change-claim.entity';
import { AWAIT_LEASE_S, AwaitingClaim, SubscriptionClaimsRepository } from './subscription-claims.repository';
import { SubscriptionView, subscriptionView } from './subscription.dto';
import { SubscriptionsService } from './subscriptions.service';

/** A step of a change's transaction. */
export type TransactionStep = (m: EntityManager) => Promise<void>;

// The provider is asked again after the change's own timeout, then twice as long each time, a minute at most.
const MAX_PAUSE_MS = 60_000;

/**
 * The outcome of a subscription change the provider did not answer in time (spec §11.4). Its claim is kept
 * (SubscriptionClaims) until one of two things shows what the provider did: its answer, asked for again with
 * the change's idempotency key (the provider answers what it did, or does it then), or a webhook event that
 * shows the subscription as the change leaves it. Either way the change is audited once, naming the person
 * who asked for it, and the claim ends. A provider that refuses it when asked again ends the claim with nothing
 * to audit. The asking runs in the instance that made the change; the webhook settles it in any instance,
 * also after that one stopped.
 */
@Injectable()
export class SubscriptionChangeOutcomes implements OnApplicationShutdown {
  private readonly logger = new Logger('SubscriptionChanges');
  private readonly stopping = new AbortController();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly claims: SubscriptionClaimsRepository,
    private readonly subscriptions: SubscriptionsService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  onApplicationShutdown(): void {
    this.stopping.abort();
  }

  /** Asks the provider again in the background (`ask`: the change's calls under its key) until it answers. */
  followUp(organisationId: string, claim: string, awaited: AwaitedChange, ask: () => Promise<TransactionStep>): void {
    void this.follow(organisationId, claim, awaited, ask).catch((err: unknown) =>
      this.logger.error({ msg: 'following up a subscription change failed', organisationId, action: awaited.action, error: String(err) }),
    );
  }

  /**
   * In the transaction of webhook events just applied to the organisation's subscriptions: when a change of it
   * awaits its outcome and the subscription now shows it, the change is known: audited, its claim ended.
   */
  async settleFromEvents(m: EntityManager, organisationId: string): Promise<void> {
    const held = await this.claims.awaiting(m, organisationId);
    if (!held) return;
    const now = await this.view(m, organisationId);
    if (now && shows(now, held.awaiting.expect)) await this.record(m, organisationId, held, now, 'webhook');
  }

  private async follow(organisationId: string, claim: string, awaited: AwaitedChange, ask: () => Promise<TransactionStep>): Promise<void> {
    const deadline = Date.now() + AWAIT_LEASE_S * 1000;
    for (let pause = Math.max(1000, this.config.providerTimeoutMs); Date.now() + pause < deadline; pause = Math.min(2 * pause, MAX_PAUSE_MS)) {
      const stopped = await sleep(pause, false, { signal: this.stopping.signal }).catch(() => true);
      if (stopped) return;
      let apply: TransactionStep;
      try {
        apply = await ask();
      } catch (err) {
        if (stillUnknown(err)) continue;
        if (this.stopping.signal.aborted) return;
        this.logger.warn({ msg: 'a subscription change that timed out was refused when asked again: nothing changed', organisationId, action: awaited.action, error: String(err) });
        await this.claims.release(this.db.manager, organisationId, claim);
        return;
      }
      if (!this.stopping.signal.aborted) await this.settleFromAnswer(organisationId, claim, awaited, apply);
      return;
    }
  }

  /** The provider's answer, applied and audited under the subscription's lock, unless a webhook settled it first. */
  private settleFromAnswer(organisationId: string, claim: string, awaited: AwaitedChange, apply: TransactionStep): Promise<void> {
    return transaction(this.db, async (m) => {
      await this.subscriptions.lock(m, [awaited.customerId ?? undefined, awaited.subscriptionId]);
      const held = await this.claims.awaiting(m, organisationId, claim);
      if (!held) return;
      await apply(m);
      await this.record(m, organisationId, held, await this.view(m, organisationId), 'provider');
    });
  }

  private async record(m: EntityManager, organisationId: string, held: AwaitingClaim, after: SubscriptionView | null, settledBy: 'provider' | 'webhook') {
    const { actor, requestId, action, before } = held.awaiting;
    await this.audit.record(m, { actor, requestId }, { action, organisationId, before, after: { subscription: after, settled_by: settledBy } });
    await this.claims.release(m, organisationId, held.claim);
  }

  private async view(m: EntityManager, organisationId: string): Promise<SubscriptionView | null> {
    const live = await this.subscriptions.liveOf(m, organisationId);
    return live ? subscriptionView(live) : null;
  }
}

/** The provider has not told what it did yet: it timed out again, is still busy with the key, or is unreachable. */
export function stillUnknown(err: unknown): boolean {
  return err instanceof PaymentProviderError && (err.outcomeUnknown || err.kind === 'unavailable' || err.kind === 'rate_limited');
}

/** The subscription shows what the change makes: every field it names is as expected (a pending change by its plan). */
export function shows(view: SubscriptionView, expect: ExpectedSubscription): boolean {
  return Object.entries(expect).every(([field, value]) => {
    if (field !== 'pending_change' || value === null) return isDeepStrictEqual(view[field as keyof SubscriptionView], value);
    const pending = view.pending_change;
    return pending !== null && isDeepStrictEqual({ tier: pending.tier, interval: pending.interval, seats: pending.seats }, value);
  });
}
