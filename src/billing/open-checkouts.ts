import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** What a checkout sells: a second checkout for the same plan gets the open session back. */
export interface CheckoutPlan {
  tier: string;
  priceId: string | null;
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

/** The open_checkouts table (one row per organisation); see open-checkout.entity.ts. */
@Injectable()
export class OpenCheckouts {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims the organisation's checkout for this request, in one statement (the row lock of INSERT … ON CONFLICT
   * orders two instances). Answers the session recorded so far (null: none), or 'busy' while another request
   * holds a live claim.
   */
  async claim(organisationId: string, claim: string): Promise<{ recorded: RecordedSession | null } | 'busy'> {
    const rows: { session_id: string | null; url: string; tier: string; price_id: string | null }[] = await this.db.query(
      `INSERT INTO open_checkouts AS o (organisation_id, claim, claimed_at) VALUES ($1, $2, now())
       ON CONFLICT (organisation_id) DO UPDATE SET claim = EXCLUDED.claim, claimed_at = now()
         WHERE o.claim IS NULL OR o.claimed_at < now() - interval '${LEASE}'
       RETURNING o.session_id, o.url, o.tier, o.price_id`,
      [organisationId, claim],
    );
    if (!rows.length) return 'busy';
    const [r] = rows;
    return { recorded: r.session_id ? { sessionId: r.session_id, url: r.url, tier: r.tier, priceId: r.price_id } : null };
  }

  /** Records the new session and ends the claim; false when the claim was lost meanwhile (its lease ran out). */
  async record(organisationId: string, claim: string, session: RecordedSession): Promise<boolean> {
    const [, count]: [unknown, number] = await this.db.query(
      `UPDATE open_checkouts SET session_id = $3, url = $4, tier = $5, price_id = $6, claim = NULL, claimed_at = NULL
        WHERE organisation_id = $1 AND claim = $2`,
      [organisationId, claim, session.sessionId, session.url, session.tier, session.priceId],
    );
    return count === 1;
  }

  /** Ends the claim and leaves what is recorded as it is (the next checkout looks at it again). */
  async release(organisationId: string, claim: string): Promise<void> {
    await this.db.query(`UPDATE open_checkouts SET claim = NULL, claimed_at = NULL WHERE organisation_id = $1 AND claim = $2`, [
      organisationId,
      claim,
    ]);
  }
}
