import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { namedParams, preparedQuery } from '../database/prepared';
import { licenseArguments } from '../config/tiers';
import { Membership, Role } from './membership.entity';
import { Organisation } from './organisation.entity';
import { User } from './user.entity';

export type OrganisationRow = Pick<Organisation, 'id' | 'name' | 'externalId'>;
export type UserRow = Pick<User, 'id' | 'email' | 'externalId'>;
export type MemberRow = Pick<Membership, 'userId' | 'role'> & Pick<User, 'email'>;

/** The organisation's member count, its owners, and the role `user` has there (null: none). */
export interface MembershipCounts {
  members: number;
  owners: number;
  current: Role | null;
}

// A new record unless one holds its external_id (or, for a user, its email): then no row.
const INSERT_ORGANISATION_SQL = `
  INSERT INTO organisations (name, external_id) VALUES ($1, $2) ON CONFLICT (external_id) DO NOTHING
  RETURNING id, name, external_id AS "externalId"`;
const INSERT_USER_SQL = `
  INSERT INTO users (email, external_id) VALUES (lower($1), $2) ON CONFLICT DO NOTHING
  RETURNING id, email, external_id AS "externalId"`;

const MEMBERSHIP_COUNTS_SQL = `
  SELECT count(*)::int AS members, count(*) FILTER (WHERE role = 'owner')::int AS owners,
         min(role) FILTER (WHERE user_id = $2) AS current
  FROM memberships WHERE organisation_id = $1`;

const UPSERT_MEMBERSHIP_SQL = `
  INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, $3)
  ON CONFLICT (organisation_id, user_id) DO UPDATE SET role = EXCLUDED.role`;

// The caller's own membership row is among the members: no row at all means "not a member".
const MEMBERS_FOR_SQL = `
  SELECT m.user_id AS "userId", u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id
  WHERE m.organisation_id = $1 AND EXISTS (SELECT 1 FROM memberships c WHERE c.organisation_id = $1 AND c.user_id = $2)
  ORDER BY m.created_at, m.user_id`;

/** A provider event's organisation, by the id it names and by its customer: both in one statement. */
const FIND_FOR_EVENT_SQL = `
  SELECT (SELECT id FROM organisations WHERE id = $1::uuid) AS "byId",
         (SELECT id FROM organisations WHERE provider_customer_id = $2) AS "byCustomer"`;

/** Links the customer unless it is someone else's or the organisation has one: the first link wins. */
const LINK_CUSTOMER_SQL = `
  WITH owner AS (
    SELECT id FROM organisations WHERE provider_customer_id = $2
  ), linked AS (
    UPDATE organisations SET provider_customer_id = $2
    WHERE id = $1 AND provider_customer_id IS NULL AND NOT EXISTS (SELECT 1 FROM owner)
    RETURNING id
  )
  SELECT (SELECT id FROM owner) AS owner, EXISTS (SELECT 1 FROM linked) AS linked`;

export interface OrganisationsForEvent {
  byId: string | null;
  byCustomer: string | null;
}

/** The customer's owner before the link (null: nobody) and whether this call linked it. */
export interface CustomerLink {
  owner: string | null;
  linked: boolean;
}

/** The web app's JWT names its user by external id: looked up on every JWT request, so prepared. */
const USER_BY_EXTERNAL_ID_SQL = 'SELECT id, email FROM users WHERE external_id = $1';

/**
 * GET /api/me's statement: the user, whether the cursor is one of their memberships, and the page (one row
 * more than asked, for has_more), each organisation with its tier from the license (licensing.license_state,
 * called by name), computed per organisation of the page inside this statement. Keyset on (membership created_at, organisation id):
 * stable while memberships are added.
 */
const PROFILE = namedParams('user', 'after', 'limit', 'tiers', 'graceS');
const PROFILE_SQL = `
  WITH cursor AS (
    SELECT created_at, organisation_id FROM memberships WHERE user_id = ${PROFILE.ref.user}::uuid AND organisation_id = ${PROFILE.ref.after}::uuid
  ),
  page AS (
    SELECT m.organisation_id, m.role, m.created_at FROM memberships m
    WHERE m.user_id = ${PROFILE.ref.user}::uuid
      AND (${PROFILE.ref.after}::uuid IS NULL OR (m.created_at, m.organisation_id) > (SELECT created_at, organisation_id FROM cursor))
    ORDER BY m.created_at, m.organisation_id
    LIMIT ${PROFILE.ref.limit}::int + 1
  )
  SELECT (SELECT row_to_json(u) FROM (SELECT id, email, external_id AS "externalId" FROM users WHERE id = ${PROFILE.ref.user}::uuid) u) AS "user",
         ${PROFILE.ref.after}::uuid IS NULL OR EXISTS (SELECT 1 FROM cursor) AS "cursorFound",
         COALESCE((
           SELECT json_agg(json_build_object('id', o.id, 'name', o.name, 'externalId', o.external_id, 'role', p.role, 'tier', t.tier)
                           ORDER BY p.created_at, p.organisation_id)
           FROM page p
           JOIN organisations o ON o.id = p.organisation_id
           CROSS JOIN LATERAL licensing.license_state(o.id, ${PROFILE.ref.tiers}::jsonb, ${PROFILE.ref.graceS}::bigint) t
         ), '[]') AS organisations`;

/** GET /api/me's page: `organisations` has one more than asked when there are more. */
export interface ProfileRow {
  user: UserRow | null;
  /** False when the cursor is not (or no longer) one of the user's organisations. */
  cursorFound: boolean;
  organisations: (OrganisationRow & { role: Role; tier: string })[];
}

/** Organisations, users and memberships. */
@Injectable()
export class IdentityRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  async insertOrganisation(name: string): Promise<Pick<Organisation, 'id' | 'name'>> {
    const { identifiers } = await this.db.getRepository(Organisation).insert({ name });
    return { id: identifiers[0].id, name };
  }

  async insertOrganisationIfNew(m: EntityManager, name: string, externalId: string | null): Promise<OrganisationRow | undefined> {
    const [row] = await m.query(INSERT_ORGANISATION_SQL, [name, externalId]);
    return row;
  }

  async insertUserIfNew(m: EntityManager, email: string, externalId: string | null): Promise<UserRow | undefined> {
    const [row] = await m.query(INSERT_USER_SQL, [email, externalId]);
    return row;
  }

  async findOrganisation(m: EntityManager, where: { id: string } | { externalId: string }): Promise<OrganisationRow | undefined> {
    const row = await m.getRepository(Organisation).findOne({ select: { id: true, name: true, externalId: true }, where });
    return row ?? undefined;
  }

  async findUser(m: EntityManager, where: { id: string } | { externalId: string }): Promise<UserRow | undefined> {
    const row = await m.getRepository(User).findOne({ select: { id: true, email: true, externalId: true }, where });
    return row ?? undefined;
  }

  userExists(m: EntityManager, id: string): Promise<boolean> {
    return m.getRepository(User).existsBy({ id });
  }

  async userByExternalId(externalId: string): Promise<{ id: string; email: string } | undefined> {
    const [user] = await preparedQuery<{ id: string; email: string }>(this.db, USER_BY_EXTERNAL_ID_SQL, [externalId]);
    return user;
  }

  /**
   * Locks the organisation's row against member changes (which take FOR UPDATE, above) for the rest of `m`,
   * without blocking rows that merely reference it; false when it does not exist.
   */
  async lockAgainstMemberChanges(m: EntityManager, id: string): Promise<boolean> {
    const org = await m.getRepository(Organisation).findOne({ select: { id: true }, where: { id }, lock: { mode: 'for_no_key_update' } });
    return org !== null;
  }

  /** Locks the organisation's row for the rest of the transaction `m`; false when it does not exist. */
  async lockOrganisation(m: EntityManager, id: string): Promise<boolean> {
    const org = await m.getRepository(Organisation).findOne({ select: { id: true }, where: { id }, lock: { mode: 'pessimistic_write' } });
    return org !== null;
  }

  async membershipCounts(m: EntityManager, organisationId: string, userId: string): Promise<MembershipCounts> {
    const [row] = await m.query(MEMBERSHIP_COUNTS_SQL, [organisationId, userId]);
    return row;
  }

  async memberCount(m: EntityManager, organisationId: string): Promise<number> {
    return m.getRepository(Membership).countBy({ organisationId });
  }

  async upsertMembership(m: EntityManager, organisationId: string, userId: string, role: Role): Promise<void> {
    await m.query(UPSERT_MEMBERSHIP_SQL, [organisationId, userId, role]);
  }

  async deleteMembership(m: EntityManager, organisationId: string, userId: string): Promise<void> {
    await m.getRepository(Membership).delete({ organisationId, userId });
  }

  async roleOf(userId: string, organisationId: string): Promise<Role | undefined> {
    const row = await this.db.getRepository(Membership).findOne({ select: { userId: true, organisationId: true, role: true }, where: { userId, organisationId } });
    return row?.role;
  }

  /** The organisation's members, when `callerId` is one of them; else none. */
  membersFor(organisationId: string, callerId: string): Promise<MemberRow[]> {
    return this.db.query(MEMBERS_FOR_SQL, [organisationId, callerId]);
  }

  /** The user and a page of their organisations after organisation `after` (null: the first page). */
  async profilePage(userId: string, after: string | null, limit: number): Promise<ProfileRow> {
    const { tiers, graceS } = licenseArguments(this.config);
    const [row] = await preparedQuery<ProfileRow>(this.db, PROFILE_SQL, PROFILE.values({ user: userId, after, limit, tiers, graceS }));
    return row;
  }

  /** The user's memberships, oldest first. */
  membershipsOf(userId: string): Promise<Pick<Membership, 'organisationId' | 'role'>[]> {
    return this.db.getRepository(Membership).find({
      select: { organisationId: true, userId: true, role: true },
      where: { userId },
      order: { createdAt: 'ASC' },
    });
  }

  /** The organisation's customer record with the payment provider (null: none, or no such organisation). */
  async customerOf(id: string): Promise<string | null> {
    const row = await this.db.getRepository(Organisation).findOne({ select: { id: true, providerCustomerId: true }, where: { id } });
    return row?.providerCustomerId ?? null;
  }

  /** `id` must be a UUID or null. Both on the webhook's path: prepared. */
  async findForEvent(m: EntityManager, id: string | null, customerId: string | null): Promise<OrganisationsForEvent> {
    const [row] = await preparedQuery<OrganisationsForEvent>(m, FIND_FOR_EVENT_SQL, [id, customerId]);
    return row;
  }

  async linkCustomer(m: EntityManager, organisationId: string, customerId: string): Promise<CustomerLink> {
    const [row] = await preparedQuery<CustomerLink>(m, LINK_CUSTOMER_SQL, [organisationId, customerId]);
    return row;
  }

  /** Clears the organisation's customer record if it is still `customerId`. */
  async forgetCustomer(id: string, customerId: string): Promise<void> {
    await this.db.getRepository(Organisation).update({ id, providerCustomerId: customerId }, { providerCustomerId: null });
  }

  /** Clears `customerId` from whichever organisation has it; answers that organisation. */
  async unlinkCustomer(m: EntityManager, customerId: string): Promise<string | undefined> {
    const { raw } = await m
      .createQueryBuilder()
      .update(Organisation)
      .set({ providerCustomerId: null })
      .where({ providerCustomerId: customerId })
      .returning('id')
      .execute();
    return (raw as { id: string }[])[0]?.id;
  }
}
