import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isDeepStrictEqual } from 'node:util';
import { DataSource } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { IdentityService, organisationNotFound } from '../identity/identity.service';
import { LicenseChanges } from '../subscriptions/license-changes.port';
import { OverrideRecord } from './entitlements.dto';
import { overrideRecord } from './entitlements.service';
import { OverrideRow, OverridesRepository } from './overrides.repository';
import { PutOverrideBody } from './overrides.dto';

// Limits are stored in bigint columns but must stay exact in a JS number (as the tier table's).
const MAX_LIMIT = Number.MAX_SAFE_INTEGER;

const record = (row: OverrideRow): OverrideRecord =>
  overrideRecord({ name: row.name, value: row.value, expires_at: row.expiresAt, note: row.note, created_at: row.createdAt });

/** What an audit entry keeps of an override: its record without the time it was set. */
const audited = (r: Omit<OverrideRecord, 'created_at'>) => ({ name: r.name, value: r.value, expires_at: r.expires_at, note: r.note });

/**
 * Per-organisation overrides of features and limits (spec §12), through the provisioning API. Each change
 * is audited and compared for notification in its transaction; a limit's change is serialised with usage
 * writes and member additions, so none of them is checked against a limit no longer in force.
 */
@Injectable()
export class OverridesService {
  private readonly features: Set<string>;
  private readonly metrics: Set<string>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly overrides: OverridesRepository,
    private readonly audit: AuditService,
    private readonly identity: IdentityService,
    private readonly licenseChanges: LicenseChanges,
    config: AppConfig,
  ) {
    const [plan] = Object.values(config.tiers);
    this.features = new Set(Object.keys(plan.features));
    this.metrics = new Set(Object.keys(plan.metrics));
  }

  /** Sets an override; the same value, expiry and note again change nothing (and record nothing). */
  async set(by: AuditActor, organisationId: string, name: string, body: PutOverrideBody): Promise<OverrideRecord> {
    const wanted = this.validate(name, body);
    return transaction(this.db, async (m) => {
      if (this.metrics.has(name)) await this.overrides.holdUsageWrites(m);
      await this.identity.holdMemberChanges(m, organisationId);
      const current = await this.overrides.find(m, organisationId, name);
      const before = current ? record(current) : null;
      if (before && isDeepStrictEqual(audited(before), audited(wanted))) return before;
      const after = record(await this.overrides.upsert(m, organisationId, { name, value: wanted.value, expiresAt: wanted.expires_at === null ? null : new Date(wanted.expires_at), note: wanted.note ?? null }));
      await this.audit.record(m, by, { action: 'override.set', organisationId, before: before && audited(before), after: audited(after) });
      await this.licenseChanges.licenseMayHaveChanged(m, organisationId);
      return after;
    });
  }

  async list(organisationId: string): Promise<OverrideRecord[]> {
    const rows = await this.overrides.list(organisationId);
    if (!rows) throw organisationNotFound(organisationId);
    return rows.map(record);
  }

  async delete(by: AuditActor, organisationId: string, name: string): Promise<void> {
    this.known(name);
    await transaction(this.db, async (m) => {
      if (this.metrics.has(name)) await this.overrides.holdUsageWrites(m);
      await this.identity.holdMemberChanges(m, organisationId);
      const removed = await this.overrides.remove(m, organisationId, name);
      if (!removed) throw new AppException('override_not_found', `The organisation has no override of "${name}".`);
      await this.audit.record(m, by, { action: 'override.deleted', organisationId, before: audited(record(removed)) });
      await this.licenseChanges.licenseMayHaveChanged(m, organisationId);
    });
  }

  /** 400 unless `name` is a feature or a metric of the tier table. */
  private known(name: string): void {
    if (!this.features.has(name) && !this.metrics.has(name)) {
      throw new AppException('unknown_entitlement', `"${name}" is neither a feature nor a metric of the tier table.`);
    }
  }

  /** The override asked for, checked against its name's kind; `expires_at` normalised to ISO 8601 (UTC). */
  private validate(name: string, body: PutOverrideBody): Omit<OverrideRecord, 'created_at'> {
    this.known(name);
    const { value } = body;
    if (this.features.has(name) && typeof value !== 'boolean') {
      throw new AppException('invalid_override_value', `"${name}" is a feature: its value must be true or false.`);
    }
    if (this.metrics.has(name) && !(typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_LIMIT)) {
      throw new AppException('invalid_override_value', `"${name}" is a metric: its value must be an integer limit from 0 to ${MAX_LIMIT}.`);
    }
    let expiresAt: string | null = null;
    if (body.expires_at !== undefined && body.expires_at !== null) {
      const at = new Date(body.expires_at);
      if (Number.isNaN(at.getTime())) throw new AppException('validation_failed', 'expires_at must be an ISO 8601 date and time');
      if (at.getTime() <= Date.now()) throw new AppException('validation_failed', 'expires_at must be in the future');
      expiresAt = at.toISOString();
    }
    return { name, value, expires_at: expiresAt, note: body.note ?? null };
  }
}
