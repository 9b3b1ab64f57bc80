import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException, notAMember, roleRequired } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { namedParams, preparedQuery } from '../database/prepared';
import { transaction } from '../database/transaction';
import { MembershipRecord, OrganisationRecord, UserRecord } from './admin.dto';
import { licenseStateSql, licenseStateValues } from '../licensing/licensing.repository';
import { accessSql } from './access.sql';
import { MemberLimitPolicy } from './member-limit.port';
import { Role } from './membership.entity';

/** A UUID's text form (any case): only such an id can name an organisation. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const FIND_FOR_EVENT_SQL = `
  SELECT (SELECT id FROM organisations WHERE id = $1::uuid) AS by_id,
         (SELECT id FROM organisations WHERE provider_customer_id = $2) AS by_customer`;

const LINK_CUSTOMER_SQL = `
  WITH owner AS (
    SELECT id FROM organisations WHERE provider_customer_id = $2
  ), linked AS (
    UPDATE organisations SET provider_customer_id = $2
    WHERE id = $1 AND provider_customer_id IS NULL AND NOT EXISTS (SELECT 1 FROM owner)
    RETURNING id
  )
  SELECT (SELECT id FROM owner) AS owner, EXISTS (SELECT 1 FROM linked) AS linked`;

export const organisationNotFound = (id: string) =>
  new AppException('organisation_not_found', `No organisation with id ${id}.`);

export interface OrganisationRow {
  id: string;
  name: string;
}

const ORGANISATION_COLUMNS = 'id, name, external_id';
const USER_COLUMNS = 'id, email, external_id';

/** An organisation of GET /api/me: the record, the caller's role, and its license tier. */
export type ProfileOrganisation = OrganisationRecord & { role: Role; tier: string };
export interface ProfilePage {
  user: UserRecord;
  organisations: ProfileOrganisation[];
  has_more: boolean;
}

/**
 * GET /api/me's statement: the user, whether the cursor is one of their memberships, and the page (one row
 * more than asked, for has_more), each organisation with its tier from licensing's license state, computed
 * per organisation of the page inside this statement. Keyset on (membership created_at, organisation id):
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
  SELECT (SELECT row_to_json(u) FROM (SELECT ${USER_COLUMNS} FROM users WHERE id = ${PROFILE.ref.user}::uuid) u) AS "user",
         ${PROFILE.ref.after}::uuid IS NULL OR EXISTS (SELECT 1 FROM cursor) AS "cursorFound",
         COALESCE((
           SELECT json_agg(json_build_object('id', o.id, 'name', o.name, 'external_id', o.external_id, 'role', p.role, 'tier', t.tier)
                           ORDER BY p.created_at, p.organisation_id)
           FROM page p
           JOIN organisations o ON o.id = p.organisation_id
           CROSS JOIN LATERAL (
             WITH ${licenseStateSql({ organisation: 'o.id', tiers: PROFILE.ref.tiers, graceS: PROFILE.ref.graceS })}
             SELECT tier FROM state
           ) t
         ), '[]') AS organisations`;

const emailTaken = (email: string) =>
  new AppException('email_taken', `A user with email ${email.toLowerCase()} already exists.`);

const lastOwner = (organisationId: string) =>
  new AppException('last_owner', `Organisation ${organisationId} would be left without an owner: make another member owner first.`);

/** Locks the organisation's row for the rest of the transaction (404 when it does not exist). */
async function lockOrganisation(m: EntityManager, organisationId: string): Promise<void> {
  const [org] = await m.query(`SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE`, [organisationId]);
  if (!org) throw organisationNotFound(organisationId);
}

@Injectable()
export class IdentityService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly memberLimits: MemberLimitPolicy,
    private readonly config: AppConfig,
  ) {}

  /** The operator CLI's create (`org:create`): always a new organisation. */
  async createOrganisation(name: string): Promise<OrganisationRow> {
    const [row] = await this.db.query(`INSERT INTO organisations (name) VALUES ($1) RETURNING id, name`, [name]);
    return row;
  }

  async createUser(email: string): Promise<{ id: string; email: string }> {
    const { record, created } = await this.provisionUser(email);
    if (!created) throw emailTaken(email);
    return { id: record.id, email: record.email };
  }

  /**
   * The provisioning API's create: a new organisation, or the existing one with that `externalId` (created
   * false), so a web app that retries after a lost answer gets the same record. Two statements on purpose:
   * when a concurrent create of the same external_id wins, the INSERT waits for it and does nothing, and
   * only a new statement sees the winner's row.
   */
  async provisionOrganisation(name: string, externalId?: string): Promise<{ record: OrganisationRecord; created: boolean }> {
    const [row] = await this.db.query(
      `INSERT INTO organisations (name, external_id) VALUES ($1, $2) ON CONFLICT (external_id) DO NOTHING
       RETURNING ${ORGANISATION_COLUMNS}`,
      [name, externalId ?? null],
    );
    if (row) return { record: row, created: true };
    return { record: (await this.findOrganisation({ externalId: externalId! }))!, created: false };
  }

  /**
   * As provisionOrganisation, for users. The email is unique too: an email already taken under another
   * external_id (or none) is 409 `email_taken`, never a silent merge of two people.
   */
  async provisionUser(email: string, externalId?: string): Promise<{ record: UserRecord; created: boolean }> {
    const [row] = await this.db.query(
      `INSERT INTO users (email, external_id) VALUES (lower($1), $2) ON CONFLICT DO NOTHING RETURNING ${USER_COLUMNS}`,
      [email, externalId ?? null],
    );
    if (row) return { record: row, created: true };
    const existing = externalId === undefined ? undefined : await this.findUser({ externalId });
    if (!existing) throw emailTaken(email);
    return { record: existing, created: false };
  }

  async findOrganisation(by: { id: string } | { externalId: string }): Promise<OrganisationRecord | undefined> {
    const [column, value] = 'id' in by ? ['id', by.id] : ['external_id', by.externalId];
    const [row] = await this.db.query(`SELECT ${ORGANISATION_COLUMNS} FROM organisations WHERE ${column} = $1`, [value]);
    return row;
  }

  async findUser(by: { id: string } | { externalId: string }): Promise<UserRecord | undefined> {
    const [column, value] = 'id' in by ? ['id', by.id] : ['external_id', by.externalId];
    const [row] = await this.db.query(`SELECT ${USER_COLUMNS} FROM users WHERE ${column} = $1`, [value]);
    return row;
  }

  /**
   * Adds a member, or changes an existing member's role: the one method that writes memberships, so the
   * users limit in force holds on every path (provisioning API, CLI, tests). The organisation row lock
   * serialises concurrent changes of its members across instances, so two additions cannot both take the
   * last seat and two demotions cannot both leave it without an owner; changing a role never needs a seat.
   */
  addMember(organisationId: string, userId: string, role: Role): Promise<MembershipRecord> {
    return transaction(this.db, async (m) => {
      await lockOrganisation(m, organisationId);
      const [user] = await m.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
      if (!user) throw new AppException('user_not_found', `No user with id ${userId}.`);
      const [{ members, current, owners }] = await m.query(
        `SELECT count(*)::int AS members, min(role) FILTER (WHERE user_id = $2) AS current,
                count(*) FILTER (WHERE role = 'owner')::int AS owners
         FROM memberships WHERE organisation_id = $1`,
        [organisationId, userId],
      );
      if (!current) {
        const { limit, tier, isActive } = await this.memberLimits.memberLimit(m, organisationId);
        if (members >= limit) {
          throw new AppException(
            'limit_exceeded',
            `Organisation ${organisationId} already has ${members} users, the limit of ${limit} in force ` +
              `(tier ${tier}${isActive ? '' : ', not active: free limits apply'}).`,
          );
        }
      }
      if (current === 'owner' && role !== 'owner' && owners === 1) throw lastOwner(organisationId);
      await m.query(
        `INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (organisation_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
        [organisationId, userId, role],
      );
      return { organisation_id: organisationId, user_id: userId, role };
    });
  }

  /** Removes a member; never the last owner (409), under the same organisation lock as addMember. */
  removeMember(organisationId: string, userId: string): Promise<void> {
    return transaction(this.db, async (m) => {
      await lockOrganisation(m, organisationId);
      const [row] = await m.query(
        `SELECT role, (SELECT count(*) FROM memberships WHERE organisation_id = $1 AND role = 'owner')::int AS owners
         FROM memberships WHERE organisation_id = $1 AND user_id = $2`,
        [organisationId, userId],
      );
      if (!row) throw new AppException('membership_not_found', `User ${userId} is not a member of organisation ${organisationId}.`);
      if (row.role === 'owner' && row.owners === 1) throw lastOwner(organisationId);
      await m.query(`DELETE FROM memberships WHERE organisation_id = $1 AND user_id = $2`, [organisationId, userId]);
    });
  }

  /**
   * The organisation's members, for a caller who is one of them (one statement: the caller's own
   * membership row is among them, so an empty answer means "not a member", and existence does not leak).
   */
  async membersFor(caller: AuthUser, organisationId: string): Promise<{ user_id: string; email: string; role: Role }[]> {
    const rows = await this.db.query(
      `SELECT m.user_id, u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id
       WHERE m.organisation_id = $1 AND ${accessSql.isMember('$1', '$2')}
       ORDER BY m.created_at, m.user_id`,
      [organisationId, caller.id],
    );
    if (!rows.length) throw notAMember();
    return rows;
  }

  /**
   * GET /api/me in one statement: the user and one page of their organisations (oldest membership first),
   * each with the caller's role and its license tier. `startingAfter` is the last organisation id of the
   * previous page: 400 `invalid_cursor` when the user is not (or no longer) a member of it.
   */
  async profilePage(userId: string, page: { limit: number; startingAfter?: string }): Promise<ProfilePage> {
    // The tier table and grace period, as every statement embedding the license state binds them.
    const { tiers, graceS } = licenseStateValues(this.config, '' /* the organisations are the page's */);
    const [row] = await preparedQuery<{ user: UserRecord | null; cursorFound: boolean; organisations: ProfileOrganisation[] }>(
      this.db,
      PROFILE_SQL,
      PROFILE.values({ user: userId, after: page.startingAfter ?? null, limit: page.limit, tiers, graceS }),
    );
    if (!row.user) throw new AppException('user_not_found', `No user with id ${userId}.`);
    if (!row.cursorFound) throw new AppException('invalid_cursor', 'starting_after is not an organisation of yours.');
    const organisations = row.organisations.slice(0, page.limit);
    return { user: row.user, organisations, has_more: row.organisations.length > page.limit };
  }

  /** The organisation's customer record with the payment provider, if it has one. */
  async customerOf(organisationId: string): Promise<string | null> {
    const [row] = await this.db.query(`SELECT provider_customer_id FROM organisations WHERE id = $1`, [organisationId]);
    return row?.provider_customer_id ?? null;
  }

  /**
   * For a provider event: the organisation with id `id` (when it exists) and the one linked to the
   * customer id, in one statement. Ids that are not UUIDs name no organisation.
   */
  async findForEvent(
    manager: EntityManager,
    ids: { id?: string; customerId?: string },
  ): Promise<{ byId: string | null; byCustomer: string | null }> {
    const [row] = await preparedQuery(manager, FIND_FOR_EVENT_SQL, [
      ids.id !== undefined && UUID.test(ids.id) ? ids.id : null,
      ids.customerId ?? null,
    ]);
    return { byId: row.by_id, byCustomer: row.by_customer };
  }

  /**
   * Makes `customerId` the organisation's customer record, unless the customer is already another
   * organisation's or the organisation already has one: the first link wins, nothing is ever moved.
   * Answers the customer's owner before this call (null: nobody) and whether this call linked it.
   */
  async linkCustomer(manager: EntityManager, organisationId: string, customerId: string): Promise<{ owner: string | null; linked: boolean }> {
    const [row] = await preparedQuery(manager, LINK_CUSTOMER_SQL, [organisationId, customerId]);
    return { owner: row.owner, linked: row.linked };
  }

  /** Forgets a customer record the provider no longer knows (only if it is still the one stored). */
  async forgetCustomer(organisationId: string, customerId: string): Promise<void> {
    await this.db.query(`UPDATE organisations SET provider_customer_id = NULL WHERE id = $1 AND provider_customer_id = $2`, [
      organisationId,
      customerId,
    ]);
  }

  /**
   * The customer is gone at the provider: the organisation that had it has no customer record any more.
   * Answers that organisation, if any.
   */
  async unlinkCustomer(manager: EntityManager, customerId: string): Promise<string | undefined> {
    const [rows] = await manager.query(
      `UPDATE organisations SET provider_customer_id = NULL WHERE provider_customer_id = $1 RETURNING id`,
      [customerId],
    );
    return rows[0]?.id;
  }

  async userExists(userId: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
    return rows.length > 0;
  }

  /**
   * The caller's role in the organisation. 403 `organisation_forbidden` (same body whether or not the
   * organisation exists) for a non-member; 403 `role_forbidden` when the caller's route declares roles
   * (`@Session({ orgRole })`, carried on the caller) and the caller has none of them.
   */
  async requireMember(caller: AuthUser, organisationId: string): Promise<Role> {
    const [row] = await this.db.query(`SELECT role FROM memberships WHERE user_id = $1 AND organisation_id = $2`, [
      caller.id,
      organisationId,
    ]);
    if (!row) throw notAMember();
    if (caller.orgRole && !caller.orgRole.includes(row.role)) throw roleRequired(caller.orgRole);
    return row.role;
  }

  /** The organisations the user belongs to, with their role. */
  async membershipsOf(userId: string): Promise<{ organisation_id: string; role: Role }[]> {
    return this.db.query(`SELECT organisation_id, role FROM memberships WHERE user_id = $1 ORDER BY created_at`, [userId]);
  }
}
