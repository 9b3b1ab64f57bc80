import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException, notAMember, roleRequired } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { preparedQuery } from '../database/prepared';
import { transaction } from '../database/transaction';
import { MemberLimitPolicy } from './member-limit.port';
import { Role } from './membership.entity';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

@Injectable()
export class IdentityService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly memberLimits: MemberLimitPolicy,
  ) {}

  async createOrganisation(name: string): Promise<OrganisationRow> {
    const [row] = await this.db.query(`INSERT INTO organisations (name) VALUES ($1) RETURNING id, name`, [name]);
    return row;
  }

  async createUser(email: string): Promise<{ id: string; email: string }> {
    const [row] = await this.db.query(
      `INSERT INTO users (email) VALUES (lower($1)) ON CONFLICT (email) DO NOTHING RETURNING id, email`,
      [email],
    );
    if (!row) throw new AppException('email_taken', `A user with email ${email.toLowerCase()} already exists.`);
    return row;
  }

  /**
   * Adds a member, or changes an existing member's role: the one method that writes memberships, so the
   * users limit in force holds on every path (CLI, tests, any future API). The organisation row lock
   * serialises concurrent additions across instances, so two of them cannot both take the last seat;
   * changing a role never needs a seat.
   */
  addMember(organisationId: string, userId: string, role: Role) {
    return transaction(this.db, async (m) => {
      const [org] = await m.query(`SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE`, [organisationId]);
      if (!org) throw organisationNotFound(organisationId);
      const [user] = await m.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
      if (!user) throw new AppException('user_not_found', `No user with id ${userId}.`);
      const [{ members, existing }] = await m.query(
        `SELECT count(*)::int AS members, bool_or(user_id = $2) AS existing FROM memberships WHERE organisation_id = $1`,
        [organisationId, userId],
      );
      if (!existing) {
        const { limit, tier, isActive } = await this.memberLimits.memberLimit(m, organisationId);
        if (members >= limit) {
          throw new AppException(
            'limit_exceeded',
            `Organisation ${organisationId} already has ${members} users, the limit of ${limit} in force ` +
              `(tier ${tier}${isActive ? '' : ', not active: free limits apply'}).`,
          );
        }
      }
      await m.query(
        `INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (organisation_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
        [organisationId, userId, role],
      );
      return { organisation_id: organisationId, user_id: userId, role };
    });
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
