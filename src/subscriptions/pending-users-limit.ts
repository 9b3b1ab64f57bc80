import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { SubscriptionClaimsRepository } from './subscription-claims.repository';
import { usersLimit } from './subscription-plan';
import { SubscriptionsService } from './subscriptions.service';

/** The users limit a change of the subscription will put in force, lower than today's or not. */
export interface PendingUsersLimit {
  limit: number;
  /** The pending change's plan and when it takes effect (Unix seconds); null for a change still being made. */
  change: { tier: string; seats: number | null; effectiveAt: number } | null;
}

/**
 * A downgrade takes effect at the period's end, when it can no longer be refused (spec §11.4): until then,
 * members are added only within the users limit it will put in force. That limit is the pending change's
 * (the schedule's next phase, kept on the subscription), or, while a change is being made at the provider,
 * the one its claim holds.
 */
@Injectable()
export class PendingUsersLimits {
  constructor(
    private readonly config: AppConfig,
    private readonly subscriptions: SubscriptionsService,
    private readonly claims: SubscriptionClaimsRepository,
  ) {}

  /** The lowest of the two, in the caller's transaction `m`; null when no change is pending or under way. */
  async of(m: EntityManager, organisationId: string): Promise<PendingUsersLimit | null> {
    const tiers = this.config.tiers;
    const pending = (await this.subscriptions.liveOf(m, organisationId))?.pendingChange;
    const scheduled: PendingUsersLimit | null =
      pending?.tier && Object.hasOwn(tiers, pending.tier)
        ? {
            limit: usersLimit(tiers, { tier: pending.tier, seats: pending.seats ?? 1 }),
            change: { tier: pending.tier, seats: tiers[pending.tier].perSeat ? pending.seats : null, effectiveAt: pending.effective_at },
          }
        : null;
    const cap = await this.claims.usersCap(m, organisationId);
    if (cap !== null && (!scheduled || cap < scheduled.limit)) return { limit: cap, change: null };
    return scheduled;
  }
}
