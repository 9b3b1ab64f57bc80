import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AwaitedChange } from './subscription-change-claim.entity';
import { SubscriptionClaimsRepository } from './subscription-claims.repository';

// A second change waits up to ~10 s for the first (a few provider calls), then answers 409 change_in_progress.
const CLAIM_ATTEMPTS = 50;
const CLAIM_RETRY_MS = 200;

/** The claim a change holds (SubscriptionClaims.during). */
export interface Claim {
  /** Ends the claim in the transaction that records the change, so the claim and the change commit together. */
  end(m: EntityManager): Promise<void>;
  /** Holds member additions to `usersCap` while the claim lasts (a downgrade that lowers the users limit). */
  cap(m: EntityManager, usersCap: number): Promise<void>;
  /**
   * Keeps the claim past `work` for a change whose outcome at the provider is not known yet, until its answer or
   * its webhook settles it (SubscriptionChangeOutcomes) or AWAIT_LEASE_S passes. Answers the claim's id.
   */
  awaitOutcome(awaiting: AwaitedChange): Promise<string>;
}

/**
 * One change of an organisation's subscription at a time, across instances, without holding a database
 * connection while the provider is asked (subscription-change-claim.entity.ts): a second change waits for the
 * first, then reads the state the first one left.
 */
@Injectable()
export class SubscriptionClaims {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repository: SubscriptionClaimsRepository,
  ) {}

  /**
   * Runs `work` holding the organisation's claim. `claim.end(m)` ends it in the transaction that applies the
   * change; it is ended again afterwards in any case (a `work` that failed, or whose transaction rolled back).
   */
  async during<T>(organisationId: string, work: (claim: Claim) => Promise<T>): Promise<T> {
    const claim = randomUUID();
    for (let attempt = 1; !(await this.repository.claim(organisationId, claim)); attempt++) {
      if (await this.repository.isAwaiting(organisationId)) {
        throw new AppException(
          'change_in_progress',
          'The last change of this subscription got no answer from the payment provider in time: it may have been applied, and will ' +
            'show within minutes. Try again once it does.',
          { retryAfterS: 30 },
        );
      }
      if (attempt >= CLAIM_ATTEMPTS) {
        throw new AppException('change_in_progress', 'Another change of this subscription is being made; try again in a moment.', { retryAfterS: 2 });
      }
      await sleep(CLAIM_RETRY_MS);
    }
    let kept = false;
    try {
      return await work({
        end: (m) => this.repository.release(m, organisationId, claim),
        cap: (m, usersCap) => this.repository.cap(m, organisationId, claim, usersCap),
        awaitOutcome: async (awaiting) => {
          await this.repository.awaitOutcome(organisationId, claim, awaiting);
          kept = true;
          return claim;
        },
      });
    } finally {
      if (!kept) await this.repository.release(this.db.manager, organisationId, claim);
    }
  }
}
