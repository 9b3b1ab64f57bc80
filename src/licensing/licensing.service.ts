import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException, notAMember, unauthenticated } from '../common/app-exception';
import { PendingUsersLimits } from '../subscriptions/pending-users-limit';
import { AppConfig } from '../config/app-config';
import type { QueryCaller } from '../common/route-auth.decorators';
import { Metric, tableMetrics } from '../config/tiers';
import { organisationNotFound } from '../identity/identity.service';
import { MemberLimit, MemberLimitPolicy } from '../identity/member-limit.port';
import { LicensingRepository, LicenseStatusRow } from './licensing.repository';
import { UsageRepository } from './usage.repository';

export interface LicenseStatus {
  license: { is_active: boolean; is_expired: boolean; tier: string };
  usage: Record<Metric, { used: number; limit: number; at_capacity: boolean }>;
}

export interface CheckResult {
  allowed: boolean;
  used: number;
  limit: number;
  remaining: number;
}

/** Reads an organisation's license and usage against the limits in force. */
@Injectable()
export class LicensingService implements MemberLimitPolicy {
  private readonly logger = new Logger(LicensingService.name);

  /** The metrics of the tier table, which the check's metric form may name. */
  private readonly metrics: readonly string[];

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly licenses: LicensingRepository,
    private readonly usage: UsageRepository,
    private readonly pendingLimits: PendingUsersLimits,
    config: AppConfig,
  ) {
    this.metrics = tableMetrics(config.tiers);
  }

  /** `userId` null: a service-key caller (404 for an unknown organisation); else members only (403). */
  async status(m: EntityManager, organisationId: string, userId: string | null): Promise<LicenseStatus> {
    const row = await this.licenses.status(m, organisationId, userId);
    if (!row) throw userId ? notAMember() : organisationNotFound(organisationId);
    return this.toStatus(organisationId, row);
  }

  /**
   * The status for the caller of `@Session({ verifiedBy: 'query' })`. A session token (its SHA-256) is
   * verified in the same statement: 401 when no live session matches, 403 when its user is not a member.
   * A user the guard already verified (a JWT) is read like any member: 403 when not one; a service key
   * like a back-end (404 for an unknown organisation).
   */
  async statusForCaller(organisationId: string, caller: QueryCaller): Promise<LicenseStatus> {
    if (caller.sessionTokenHash === undefined) return this.status(this.db.manager, organisationId, caller.userId ?? null);
    const row = await this.licenses.sessionStatus(organisationId, caller.sessionTokenHash);
    if (!row.authenticated) throw unauthenticated();
    if (!row.member) throw notAMember();
    return this.toStatus(organisationId, row);
  }

  private toStatus(organisationId: string, row: LicenseStatusRow): LicenseStatus {
    if (!row.tierKnown) {
      // TIERS_FILE no longer lists this tier: free limits apply until the license changes.
      this.logger.warn({ msg: 'license tier missing from the tier table; free limits apply', organisationId, tier: row.tier });
    }
    const metric = (used: number, limit: number) => ({ used, limit, at_capacity: used >= limit });
    return {
      license: { is_active: row.isActive, is_expired: row.isExpired, tier: row.tier },
      usage: {
        projects: metric(row.projectsUsed, row.projectsLimit),
        ai_tokens: metric(row.aiTokensUsed, row.aiTokensLimit),
        users: metric(row.usersUsed, row.usersLimit),
      },
    };
  }

  /** MemberLimitPolicy: identity asks this before it adds a member, under its lock (in `manager`). */
  async memberLimit(manager: EntityManager, organisationId: string): Promise<MemberLimit> {
    const { license, usage } = await this.status(manager, organisationId, null);
    const pending = await this.pendingLimits.of(manager, organisationId);
    return { limit: usage.users.limit, tier: license.tier, isActive: license.is_active, pending };
  }

  /** Would a report of `amount` more of `metric` be accepted now (it fits, or the metric is billed past its limit)? */
  async check(organisationId: string, userId: string | null, metric: string, amount: number): Promise<CheckResult> {
    if (!this.metrics.includes(metric)) {
      throw new AppException('validation_failed', `metric must be one of the following values: ${this.metrics.join(', ')}`);
    }
    const row = await this.usage.check(organisationId, userId, metric, amount);
    if (!row) throw userId ? notAMember() : organisationNotFound(organisationId);
    const { used, limit, allowed } = row;
    return { allowed, used, limit, remaining: Math.max(limit - used, 0) };
  }
}
