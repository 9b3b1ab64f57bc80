import { EntityManager } from 'typeorm';

export interface MemberLimit {
  /** The users limit in force (the free tier's while a paid license is not active). */
  limit: number;
  tier: string;
  isActive: boolean;
  /**
   * A change of the subscription pending at the provider (or being made) that will lower the users limit at
   * the period's end: additions beyond its `limit` are refused too.
   */
  pending: { limit: number; change: { tier: string; seats: number | null; effectiveAt: number } | null } | null;
}

/**
 * What identity asks before it adds a member: the users limit in force. Licensing knows the license and
 * implements it (licensing.module.ts); identity stays the only writer of memberships.
 */
export abstract class MemberLimitPolicy {
  abstract memberLimit(manager: EntityManager, organisationId: string): Promise<MemberLimit>;
}
