import { Injectable, Logger } from '@nestjs/common';
import { AppException, notAMember, unauthenticated } from '../common/app-exception';
import type { QueryCaller } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import { organisationNotFound } from '../identity/identity.service';
import { EntitlementsResponse, LimitEntitlement, Limits, OverrideRecord } from './entitlements.dto';
import { EntitlementsRow, LicensingRepository } from './licensing.repository';

/** Spec §12's entitlements body. */
export type Entitlements = EntitlementsResponse;

/**
 * The entitlements read (spec §12): the license, every feature and every limit in force with its count,
 * origin and overage, and the live overrides, decided by the license SQL in one round trip.
 */
@Injectable()
export class EntitlementsService {
  private readonly logger = new Logger(EntitlementsService.name);
  private readonly metrics: string[];
  private readonly features: string[];

  constructor(
    private readonly licenses: LicensingRepository,
    config: AppConfig,
  ) {
    // Every tier of the table has every metric and feature (tiers.ts fills them in).
    const [plan] = Object.values(config.tiers);
    this.metrics = Object.keys(plan.metrics);
    this.features = Object.keys(plan.features);
  }

  /** For a trusted back-end (and the signed token): 404 for an unknown organisation. */
  async read(organisationId: string): Promise<Entitlements> {
    const row = await this.licenses.entitlements(organisationId, {});
    if (!row.allowed) throw organisationNotFound(organisationId);
    return this.toBody(organisationId, row, true);
  }

  /**
   * For the caller of a `verifiedBy: 'query'` route: a session token is verified by the statement (401),
   * a user (session or JWT) must be a member (403), a service key reads as `read` does.
   */
  async readForCaller(organisationId: string, caller: QueryCaller): Promise<Entitlements> {
    if (caller.serviceKey !== undefined) return this.read(organisationId);
    const row = await this.licenses.entitlements(organisationId, caller);
    if (!row.authenticated) throw unauthenticated();
    if (!row.allowed) throw notAMember();
    return this.toBody(organisationId, row, readsOverrideNotes(row.role));
  }

  /** Is `feature` in force? `userId` null: a service key (404 for an unknown organisation); else members only (403). */
  async checkFeature(organisationId: string, userId: string | null, feature: string): Promise<{ allowed: boolean }> {
    if (!this.features.includes(feature)) {
      throw new AppException('unknown_entitlement', `"${feature}" is not a feature of the tier table (${this.features.join(', ') || 'none'}).`);
    }
    const { features } = userId === null ? await this.read(organisationId) : await this.readForCaller(organisationId, { userId });
    return { allowed: features[feature] };
  }

  private toBody(organisationId: string, row: EntitlementsRow, withNotes: boolean): Entitlements {
    if (!row.tierKnown) {
      this.logger.warn({ msg: 'license tier missing from the tier table; free limits apply', organisationId, tier: row.tier });
    }
    const limit = (metric: string): LimitEntitlement => {
      const used = row.used[metric] ?? 0;
      const value = row.limits[metric];
      const entitlement: LimitEntitlement = { used, limit: value, at_capacity: used >= value, overage: row.overage[metric], source: row.sources[metric] ?? 'tier' };
      const credits = row.credits[metric];
      if (!credits) return entitlement;
      const available = Math.max(value - used, 0) + credits.balance - credits.reserved;
      return { ...entitlement, balance: credits.balance, reserved: credits.reserved, available };
    };
    return {
      organisation_id: organisationId,
      tier: row.tier,
      is_active: row.isActive,
      is_expired: row.isExpired,
      version: row.version,
      seats: row.seats,
      plan_version: row.planVersion,
      features: Object.fromEntries(this.features.map((f) => [f, row.features[f] === true])),
      limits: Object.fromEntries(this.metrics.map((m) => [m, limit(m)])) as Limits,
      overrides: row.overrides.map((o) => overrideRecord(o, withNotes)),
    };
  }
}

/**
 * Whether a member of this role reads overrides' notes: free text that may name a customer's contact, for the
 * owners and admins (and trusted back-ends, which call with a service key), not for every member.
 */
export function readsOverrideNotes(role: string | null): boolean {
  return role === 'owner' || role === 'admin';
}

/** An override as the API shows it (times in ISO 8601, UTC); without `note` for a caller who may not read it. */
export function overrideRecord(
  o: { name: string; value: boolean | number; expires_at: string | Date | null; note: string | null; created_at: string | Date },
  withNote = true,
): OverrideRecord {
  return {
    name: o.name,
    value: o.value,
    expires_at: o.expires_at === null ? null : new Date(o.expires_at).toISOString(),
    ...(withNote ? { note: o.note } : {}),
    created_at: new Date(o.created_at).toISOString(),
  };
}
