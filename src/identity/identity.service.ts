import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException, notAMember, roleRequired } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { transaction } from '../database/transaction';
import { MembershipRecord, OrganisationRecord, UserRecord } from './admin.dto';
import { CustomerLink, IdentityRepository, OrganisationRow, OrganisationsForEvent, UserRow } from './identity.repository';
import { MemberLimit, MemberLimitPolicy } from './member-limit.port';
import { Role } from './membership.entity';

/** A UUID's text form (any case): only such an id can name an organisation. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const organisationNotFound = (id: string) =>
  new AppException('organisation_not_found', `No organisation with id ${id}.`);

const organisationRecord = (o: OrganisationRow): OrganisationRecord => ({ id: o.id, name: o.name, external_id: o.externalId });
const userRecord = (u: UserRow): UserRecord => ({ id: u.id, email: u.email, external_id: u.externalId });

/** An organisation of GET /api/me: the record, the caller's role, and its license tier. */
export type ProfileOrganisation = OrganisationRecord & { role: Role; tier: string };
export interface ProfilePage {
  user: UserRecord;
  organisations: ProfileOrganisation[];
  has_more: boolean;
}

const emailTaken = (email: string) =>
  new AppException('email_taken', `A user with email ${email.toLowerCase()} already exists.`);

const lastOwner = (organisationId: string) =>
  new AppException('last_owner', `Organisation ${organisationId} would be left without an owner: make another member owner first.`);

/** Called inside a membership change's transaction with the role before and after (null: no membership), e.g. to audit it. */
export type MemberChangeHook = (m: EntityManager, before: Role | null, after: Role | null) => Promise<void>;

@Injectable()
export class IdentityService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly identity: IdentityRepository,
    private readonly memberLimits: MemberLimitPolicy,
  ) {}

  /** The operator CLI's create (`org:create`): always a new organisation. */
  createOrganisation(name: string): Promise<{ id: string; name: string }> {
    return this.identity.insertOrganisation(name);
  }

  async createUser(email: string): Promise<{ id: string; email: string }> {
    const { record, created } = await this.provisionUser(this.db.manager, email);
    if (!created) throw emailTaken(email);
    return { id: record.id, email: record.email };
  }

  /**
   * The provisioning API's create: a new organisation, or the existing one with that `externalId` (created
   * false), so a web app that retries after a lost answer gets the same record. Two statements on purpose:
   * when a concurrent create of the same external_id wins, the INSERT waits for it and does nothing, and
   * only a new statement sees the winner's row. Both on `m`'s connection: asking the pool for a second one
   * while a transaction holds the first can wait for ever once every connection is held that way.
   */
  async provisionOrganisation(m: EntityManager, name: string, externalId?: string): Promise<{ record: OrganisationRecord; created: boolean }> {
    const row = await this.identity.insertOrganisationIfNew(m, name, externalId ?? null);
    if (row) return { record: organisationRecord(row), created: true };
    return { record: organisationRecord((await this.identity.findOrganisation(m, { externalId: externalId! }))!), created: false };
  }

  /**
   * As provisionOrganisation, for users. The email is unique too: an email already taken under another
   * external_id (or none) is 409 `email_taken`, never a silent merge of two people.
   */
  async provisionUser(m: EntityManager, email: string, externalId?: string): Promise<{ record: UserRecord; created: boolean }> {
    const row = await this.identity.insertUserIfNew(m, email, externalId ?? null);
    if (row) return { record: userRecord(row), created: true };
    const existing = externalId === undefined ? undefined : await this.identity.findUser(m, { externalId });
    if (!existing) throw emailTaken(email);
    return { record: userRecord(existing), created: false };
  }

  async findOrganisation(by: { id: string } | { externalId: string }): Promise<OrganisationRecord | undefined> {
    const row = await this.identity.findOrganisation(this.db.manager, by);
    return row && organisationRecord(row);
  }

  async findUser(by: { id: string } | { externalId: string }): Promise<UserRecord | undefined> {
    const row = await this.identity.findUser(this.db.manager, by);
    return row && userRecord(row);
  }

  /**
   * Adds a member, or changes an existing member's role: the one method that writes memberships, so the
   * users limit in force holds on every path (provisioning API, CLI, tests). The organisation row lock
   * serialises concurrent changes of its members across instances, so two additions cannot both take the
   * last seat and two demotions cannot both leave it without an owner; changing a role never needs a seat.
   */
  addMember(organisationId: string, userId: string, role: Role, onChange?: MemberChangeHook): Promise<MembershipRecord> {
    return transaction(this.db, async (m) => {
      await this.lockOrganisation(m, organisationId);
      if (!(await this.identity.userExists(m, userId))) throw new AppException('user_not_found', `No user with id ${userId}.`);
      const { members, current, owners } = await this.identity.membershipCounts(m, organisationId, userId);
      if (!current) {
        const { limit, tier, isActive, pending } = await this.memberLimits.memberLimit(m, organisationId);
        if (members >= limit) {
          throw new AppException(
            'limit_exceeded',
            `Organisation ${organisationId} already has ${members} users, the limit of ${limit} in force ` +
              `(tier ${tier}${isActive ? '' : ', not active: free limits apply'}).`,
          );
        }
        if (pending && members >= pending.limit) throw pendingChangeLimit(organisationId, members, pending);
      }
      if (current === 'owner' && role !== 'owner' && owners === 1) throw lastOwner(organisationId);
      await this.identity.upsertMembership(m, organisationId, userId, role);
      if (current !== role) await onChange?.(m, current ?? null, role);
      return { organisation_id: organisationId, user_id: userId, role };
    });
  }

  /** Removes a member; never the last owner (409), under the same organisation lock as addMember. */
  removeMember(organisationId: string, userId: string, onChange?: MemberChangeHook): Promise<void> {
    return transaction(this.db, async (m) => {
      await this.lockOrganisation(m, organisationId);
      const { current, owners } = await this.identity.membershipCounts(m, organisationId, userId);
      if (!current) throw new AppException('membership_not_found', `User ${userId} is not a member of organisation ${organisationId}.`);
      if (current === 'owner' && owners === 1) throw lastOwner(organisationId);
      await this.identity.deleteMembership(m, organisationId, userId);
      await onChange?.(m, current, null);
    });
  }

  /**
   * The organisation's members, for a caller who is one of them (one statement: the caller's own
   * membership row is among them, so an empty answer means "not a member", and existence does not leak).
   */
  async membersFor(caller: AuthUser, organisationId: string): Promise<{ user_id: string; email: string; role: Role }[]> {
    const rows = await this.identity.membersFor(organisationId, caller.id);
    if (!rows.length) throw notAMember();
    return rows.map((r) => ({ user_id: r.userId, email: r.email, role: r.role }));
  }

  /**
   * GET /api/me in one statement: the user and one page of their organisations (oldest membership first),
   * each with the caller's role and its license tier. `startingAfter` is the last organisation id of the
   * previous page: 400 `invalid_cursor` when the user is not (or no longer) a member of it.
   */
  async profilePage(userId: string, page: { limit: number; startingAfter?: string }): Promise<ProfilePage> {
    const row = await this.identity.profilePage(userId, page.startingAfter ?? null, page.limit);
    if (!row.user) throw new AppException('user_not_found', `No user with id ${userId}.`);
    if (!row.cursorFound) throw new AppException('invalid_cursor', 'starting_after is not an organisation of yours.');
    const organisations = row.organisations.slice(0, page.limit).map((o) => ({ ...organisationRecord(o), role: o.role, tier: o.tier }));
    return { user: userRecord(row.user), organisations, has_more: row.organisations.length > page.limit };
  }

  /** The organisation's customer record with the payment provider, if it has one. */
  /** The organisation's members (a per-seat plan may not sell fewer seats, spec §11.3, 11.4). */
  memberCount(organisationId: string): Promise<number> {
    return this.identity.memberCount(this.db.manager, organisationId);
  }

  /**
   * The organisation's members, counted under the lock addMember takes, in the caller's transaction `m`: no
   * member is added until it ends, so what the caller writes there (a limit) holds for the next addition.
   */
  async lockedMemberCount(m: EntityManager, organisationId: string): Promise<number> {
    await this.lockOrganisation(m, organisationId);
    return this.identity.memberCount(m, organisationId);
  }

  customerOf(organisationId: string): Promise<string | null> {
    return this.identity.customerOf(organisationId);
  }

  /**
   * For a provider event: the organisation with id `id` (when it exists) and the one linked to the
   * customer id, in one statement. Ids that are not UUIDs name no organisation.
   */
  findForEvent(manager: EntityManager, ids: { id?: string; customerId?: string }): Promise<OrganisationsForEvent> {
    return this.identity.findForEvent(manager, ids.id !== undefined && UUID.test(ids.id) ? ids.id : null, ids.customerId ?? null);
  }

  /**
   * Makes `customerId` the organisation's customer record, unless the customer is already another
   * organisation's or the organisation already has one: the first link wins, nothing is ever moved.
   * Answers the customer's owner before this call (null: nobody) and whether this call linked it.
   */
  linkCustomer(manager: EntityManager, organisationId: string, customerId: string): Promise<CustomerLink> {
    return this.identity.linkCustomer(manager, organisationId, customerId);
  }

  /** Forgets a customer record the provider no longer knows (only if it is still the one stored). */
  forgetCustomer(organisationId: string, customerId: string): Promise<void> {
    return this.identity.forgetCustomer(organisationId, customerId);
  }

  /**
   * The customer is gone at the provider: the organisation that had it has no customer record any more.
   * Answers that organisation, if any.
   */
  unlinkCustomer(manager: EntityManager, customerId: string): Promise<string | undefined> {
    return this.identity.unlinkCustomer(manager, customerId);
  }

  userExists(userId: string): Promise<boolean> {
    return this.identity.userExists(this.db.manager, userId);
  }

  /**
   * The caller's role in the organisation. 403 `organisation_forbidden` (same body whether or not the
   * organisation exists) for a non-member; 403 `role_forbidden` when the caller's route declares roles
   * (`@Session({ orgRole })`, carried on the caller) and the caller has none of them.
   */
  async requireMember(caller: AuthUser, organisationId: string): Promise<Role> {
    const role = await this.identity.roleOf(caller.id, organisationId);
    if (!role) throw notAMember();
    if (caller.orgRole && !caller.orgRole.includes(role)) throw roleRequired(caller.orgRole);
    return role;
  }

  /** The organisations the user belongs to, with their role. */
  async membershipsOf(userId: string): Promise<{ organisation_id: string; role: Role }[]> {
    const rows = await this.identity.membershipsOf(userId);
    return rows.map((r) => ({ organisation_id: r.organisationId, role: r.role }));
  }

  /**
   * In the caller's transaction: holds member additions and removals of the organisation until it commits (a
   * change of its users limit, say, so that an addition checks the limit in force). 404 when it does not exist.
   */
  async holdMemberChanges(m: EntityManager, organisationId: string): Promise<void> {
    if (!UUID.test(organisationId) || !(await this.identity.lockAgainstMemberChanges(m, organisationId))) throw organisationNotFound(organisationId);
  }

  /** Locks the organisation's row for the rest of the transaction (404 when it does not exist). */
  private async lockOrganisation(m: EntityManager, organisationId: string): Promise<void> {
    if (!UUID.test(organisationId) || !(await this.identity.lockOrganisation(m, organisationId))) throw organisationNotFound(organisationId);
  }
}

function pendingChangeLimit(organisationId: string, members: number, pending: NonNullable<MemberLimit['pending']>): AppException {
  const change = pending.change;
  const what = change
    ? `The subscription's change pending at the payment provider (to ${change.tier}${change.seats === null ? '' : ` with ${change.seats} seats`}, ` +
      `from ${new Date(change.effectiveAt * 1000).toISOString().slice(0, 10)})`
    : 'The change of the subscription being made at the payment provider';
  return new AppException(
    'pending_change_limit',
    `${what} allows ${pending.limit} users; organisation ${organisationId} has ${members}. ` +
      'Release the pending change (DELETE /api/billing/subscription/pending-change) or change to more seats first.',
  );
}
