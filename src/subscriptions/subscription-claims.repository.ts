import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { SubscriptionChangeClaim } from './subscription-change-claim.entity';

/**
 * Longer than the slowest change can take (up to three provider calls, each up to three attempts of
 * PAYPROVIDER_TIMEOUT_MS after its wait for the provider budget), so only a request that died loses its claim.
 */
const LEASE = '3 minutes';

// One statement: the row lock of INSERT … ON CONFLICT orders two instances.
const CLAIM_SQL = `
  INSERT INTO subscription_change_claims AS c (organisation_id, claim, claimed_at) VALUES ($1, $2, now())
  ON CONFLICT (organisation_id) DO UPDATE SET claim = EXCLUDED.claim, claimed_at = now()
    WHERE c.claimed_at < now() - interval '${LEASE}'
  RETURNING c.claim`;

const USERS_CAP_SQL = `
  SELECT users_cap AS "usersCap" FROM subscription_change_claims
   WHERE organisation_id = $1 AND claimed_at >= now() - interval '${LEASE}'`;

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

  /** Ends the claim; in the change's transaction (`m`) when there is one, so the next change sees its result. */
  async release(m: EntityManager, organisationId: string, claim: string): Promise<void> {
    await m.getRepository(SubscriptionChangeClaim).delete({ organisationId, claim });
  }
}
