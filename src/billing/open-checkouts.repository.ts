import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { OpenCheckout } from './open-checkout.entity';

/** What a checkout sells: a second checkout for the same plan gets the open session back. */
export interface CheckoutPlan {
  tier: string;
  priceId: string | null;
  /** The seats of a per-seat tier; null otherwise. */
  seats: number | null;
  /** Days of trial the session gives (0: none). */
  trialDays: number;
  /** The currency asked for (lower case); null: the price's own. */
  currency: string | null;
}

export interface RecordedSession extends CheckoutPlan {
  sessionId: string;
  url: string;
}

/**
 * Longer than the slowest opening can take (a lookup or an expiry, then a creation: each up to three attempts
 * of PAYPROVIDER_TIMEOUT_MS after its wait for the provider budget), so only a request that died loses its claim.
 */
const LEASE = '3 minutes';

const CLAIM_SQL = `
  INSERT INTO open_checkouts AS o (organisation_id, claim, claimed_at) VALUES ($1, $2, now())
  ON CONFLICT (organisation_id) DO UPDATE SET claim = EXCLUDED.claim, claimed_at = now()
    WHERE o.claim IS NULL OR o.claimed_at < now() - interval '${LEASE}'
  RETURNING o.session_id AS "sessionId", o.url, o.tier, o.price_id AS "priceId", o.seats, o.trial_days AS "trialDays", o.currency`;

/**
 * Every query of the open_checkouts table (one row per organisation; see open-checkout.entity.ts): the only
 * file with SQL for it.
 */
@Injectable()
export class OpenCheckoutsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims the organisation's checkout for this request, in one statement (the row lock of INSERT … ON CONFLICT
   * orders two instances). Answers the session recorded so far (null: none), or 'busy' while another request
   * holds a live claim.
   */
  async claim(organisationId: string, claim: string): Promise<{ recorded: RecordedSession | null } | 'busy'> {
    const rows = await preparedQuery<CheckoutPlan & { sessionId: string | null; url: string }>(this.db, CLAIM_SQL, [
      organisationId,
      claim,
    ]);
    if (!rows.length) return 'busy';
    const [r] = rows;
    return { recorded: r.sessionId ? { ...r, sessionId: r.sessionId } : null };
  }

  /** Records the new session and ends the claim; false when the claim was lost meanwhile (its lease ran out). */
  async record(organisationId: string, claim: string, session: RecordedSession): Promise<boolean> {
    const { affected } = await this.db
      .getRepository(OpenCheckout)
      .update(
        { organisationId, claim },
        {
          sessionId: session.sessionId,
          url: session.url,
          tier: session.tier,
          priceId: session.priceId,
          seats: session.seats,
          trialDays: session.trialDays,
          currency: session.currency,
          claim: null,
          claimedAt: null,
        },
      );
    return affected === 1;
  }

  /** Ends the claim and leaves what is recorded as it is (the next checkout looks at it again). */
  async release(organisationId: string, claim: string): Promise<void> {
    await this.db.getRepository(OpenCheckout).update({ organisationId, claim }, { claim: null, claimedAt: null });
  }
}
