import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, Not } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { AwaitedChange, SubscriptionChangeClaim } from './subscription-change-claim.entity';

/**
 * Longer than the slowest change can take (up to three provider calls, each up to three attempts of
 * PAYPROVIDER_TIMEOUT_MS after its wait for the provider budget), so only a request that died loses its claim.
 */
const LEASE = '3 minutes';

/**
 * A change whose outcome is awaited keeps its claim this long at most: the provider's answer or its webhook
 * normally settles it within seconds to a minute or two; past this the claim no longer holds changes back.
 */
export const AWAIT_LEASE_S = 15 * 60;

/** The claim's lease has not run out. */
const LIVE = `c.claimed_at >= now() - CASE WHEN c.awaiting IS NULL THEN interval '${LEASE}' ELSE interval '${AWAIT_LEASE_S} seconds' END`;

// One statement: the row lock of INSERT … ON CONFLICT orders two instances. A claim taken over starts clean.
const CLAIM_SQL = `
  INSERT INTO subscription_change_claims AS c (organisation_id, claim, claimed_at) VALUES ($1, $2, now())
  ON CONFLICT (organisation_id) DO UPDATE SET claim = EXCLUDED.claim, claimed_at = now(), users_cap = NULL, awaiting = NULL
    WHERE NOT (${LIVE})
  RETURNING c.claim`;

const USERS_CAP_SQL = `SELECT users_cap AS "usersCap" FROM subscription_change_claims c WHERE organisation_id = $1 AND ${LIVE}`;

const AWAIT_SQL = `UPDATE subscription_change_claims SET awaiting = $3::jsonb, claimed_at = now() WHERE organisation_id = $1 AND claim = $2`;

const AWAITING_SQL = `
  SELECT claim, awaiting FROM subscription_change_claims c
   WHERE organisation_id = $1 AND awaiting IS NOT NULL AND ${LIVE} AND ($2::uuid IS NULL OR claim = $2)
     FOR UPDATE`;

/** A claim whose change's outcome is awaited. */
export interface AwaitingClaim {
  claim: string;
  awaiting: AwaitedChange;
}

/** Every query of subscription_change_claims (see subscription-change-claim.entity.ts). */
@Injectable()
export class SubscriptionClaimsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Claims the organisation's subscription for one change; false while another request holds a live claim. */
  async claim(organisationId: string, claim: string): Promise<boolean> {
    const rows = await preparedQuery<{ claim: string }>(this.db, CLAIM_SQL, [organisationId, claim]);
    return rows.length === 1;
  }

  /** Records the users limit the claimed change would put in force (see SubscriptionChangeClaim.usersCap). */
  async cap(m: EntityManager, organisationId: string, claim: string, usersCap: number): Promise<void> {
    await m.getRepository(SubscriptionChangeClaim).update({ organisationId, claim }, { usersCap });
  }

  /** The users cap of the organisation's live claim, if it has one (a claim past its lease caps nothing). */
  async usersCap(m: EntityManager, organisationId: string): Promise<number | null> {
    const [row] = await preparedQuery<{ usersCap: number | null }>(m, USERS_CAP_SQL, [organisationId]);
    return row?.usersCap ?? null;
  }

  /** Keeps the claim for the change's outcome (its lease now AWAIT_LEASE_S from now). */
  async awaitOutcome(organisationId: string, claim: string, awaiting: AwaitedChange): Promise<void> {
    await preparedQuery(this.db, AWAIT_SQL, [organisationId, claim, JSON.stringify(awaiting)]);
  }

  /**
   * The organisation's claim awaiting its change's outcome (only `claim`'s, when given), locked in the caller's
   * transaction until it settles it; undefined when there is none (any more).
   */
  async awaiting(m: EntityManager, organisationId: string, claim: string | null = null): Promise<AwaitingClaim | undefined> {
    const [row] = await preparedQuery<AwaitingClaim>(m, AWAITING_SQL, [organisationId, claim]);
    return row;
  }

  /** Whether the organisation's claim is one awaiting its change's outcome. */
  isAwaiting(organisationId: string): Promise<boolean> {
    return this.db.getRepository(SubscriptionChangeClaim).exists({ where: { organisationId, awaiting: Not(IsNull()) } });
  }

  /** Ends the claim; in the change's transaction (`m`) when there is one, so the next change sees its result. */
  async release(m: EntityManager, organisationId: string, claim: string): Promise<void> {
    await m.getRepository(SubscriptionChangeClaim).delete({ organisationId, claim });
  }
}
