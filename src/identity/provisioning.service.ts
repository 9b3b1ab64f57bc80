import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { transaction } from '../database/transaction';
import { MembershipRecord, OrganisationRecord, UserRecord } from './admin.dto';
import { IdentityService, MemberChangeHook } from './identity.service';
import { Role } from './membership.entity';
import { SessionService } from './session.service';

const memberAction = (before: Role | null, after: Role | null) =>
  after === null ? 'member.removed' : before === null ? 'member.added' : 'member.role_changed';

/**
 * The changes of the provisioning API and the operator CLI, each with its audit entry in the same
 * transaction (spec §12): a change that fails or rolls back leaves no entry, and a create that found the
 * existing record (idempotent) or a put that changed nothing writes none. Sessions are audited by id and
 * expiry, never by token.
 */
@Injectable()
export class ProvisioningService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly identity: IdentityService,
    private readonly sessions: SessionService,
    private readonly audit: AuditService,
  ) {}

  createOrganisation(by: AuditActor, name: string, externalId?: string): Promise<{ record: OrganisationRecord; created: boolean }> {
    return transaction(this.db, async (m) => {
      const result = await this.identity.provisionOrganisation(m, name, externalId);
      if (result.created) {
        await this.audit.record(m, by, { action: 'organisation.created', organisationId: result.record.id, after: { ...result.record } });
      }
      return result;
    });
  }

  createUser(by: AuditActor, email: string, externalId?: string): Promise<{ record: UserRecord; created: boolean }> {
    return transaction(this.db, async (m) => {
      const result = await this.identity.provisionUser(m, email, externalId);
      if (result.created) await this.audit.record(m, by, { action: 'user.created', organisationId: null, after: { ...result.record } });
      return result;
    });
  }

  putMember(by: AuditActor, organisationId: string, userId: string, role: Role): Promise<MembershipRecord> {
    return this.identity.addMember(organisationId, userId, role, this.memberHook(by, organisationId, userId));
  }

  removeMember(by: AuditActor, organisationId: string, userId: string): Promise<void> {
    return this.identity.removeMember(organisationId, userId, this.memberHook(by, organisationId, userId));
  }

  createSession(by: AuditActor, userId: string, ttlS: number): Promise<{ token: string; expiresAt: Date }> {
    return transaction(this.db, async (m) => {
      const { id, token, expiresAt } = await this.sessions.create(m, userId, ttlS);
      const after = { session_id: id, user_id: userId, expires_at: expiresAt.toISOString() };
      await this.audit.record(m, by, { action: 'session.created', organisationId: null, after });
      return { token, expiresAt };
    });
  }

  /** One session by its token; the entry names the session's id, never the token. */
  revokeSession(by: AuditActor, token: string): Promise<number> {
    return transaction(this.db, async (m) => {
      const revoked = await this.sessions.revoke(m, token);
      if (!revoked) return 0;
      const after = { session_id: revoked.id, user_id: revoked.userId, revoked: 1 };
      await this.audit.record(m, by, { action: 'sessions.revoked', organisationId: null, after });
      return 1;
    });
  }

  revokeSessionsOf(by: AuditActor, userId: string): Promise<number> {
    return transaction(this.db, async (m) => {
      const revoked = await this.sessions.revokeAllOf(m, userId);
      if (revoked) await this.audit.record(m, by, { action: 'sessions.revoked', organisationId: null, after: { user_id: userId, revoked } });
      return revoked;
    });
  }

  private memberHook(by: AuditActor, organisationId: string, userId: string): MemberChangeHook {
    return (m, before, after) =>
      this.audit.record(m, by, {
        action: memberAction(before, after),
        organisationId,
        before: before && { user_id: userId, role: before },
        after: after && { user_id: userId, role: after },
      });
  }
}
