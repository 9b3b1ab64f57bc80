import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AuditRecord, AuditPage } from './audit.dto';
import { AuditEntry } from './audit-entry.entity';
import { AuditRepository } from './audit.repository';

/** Who made a change, and under which request: `service_key:<name>`, `user:<id>`, `cli:<os user>`, `operator:<email>`. */
export interface AuditActor {
  actor: string;
  requestId: string | null;
}

export interface AuditChange {
  action: string;
  organisationId: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

const record = (e: AuditEntry): AuditRecord => ({
  id: String(e.id),
  at: new Date(e.at).toISOString(),
  actor: e.actor,
  action: e.action,
  organisation_id: e.organisationId,
  before: e.before,
  after: e.after,
  request_id: e.requestId,
});

const AUDIT_ID = /^[1-9]\d{0,17}$/;

/** The audit trail (spec §12): every change is recorded by its caller, in the caller's transaction `m`. */
@Injectable()
export class AuditService {
  constructor(private readonly audit: AuditRepository) {}

  record(m: EntityManager, by: AuditActor, change: AuditChange): Promise<void> {
    return this.audit.insert(m, {
      actor: by.actor,
      requestId: by.requestId,
      action: change.action,
      organisationId: change.organisationId,
      before: change.before ?? null,
      after: change.after ?? null,
    });
  }

  /** One entry by its id (`GET /console/audit/{id}`): 400 for an id that is not one, 404 for none. */
  async entry(id: string): Promise<AuditRecord> {
    if (!AUDIT_ID.test(id)) throw new AppException('validation_failed', 'An audit entry id is a whole number.');
    const found = await this.audit.find(id);
    if (!found) throw new AppException('audit_entry_not_found', `No audit entry with id ${id}.`);
    return record(found);
  }

  /** The entries that set the named overrides' current values, by override name. */
  async overrideSets(organisationId: string, names: string[]): Promise<Map<string, AuditRecord>> {
    const rows = names.length ? await this.audit.overrideSets(organisationId, names) : [];
    return new Map(rows.map((r) => [String((r.after as { name?: unknown } | null)?.name), record(r)]));
  }

  async page(query: { organisationId?: string; limit: number; startingAfter?: string }): Promise<AuditPage> {
    if (query.startingAfter !== undefined && !AUDIT_ID.test(query.startingAfter)) {
      throw new AppException('validation_failed', 'starting_after must be the id of an audit entry');
    }
    const rows = await this.audit.page(query.organisationId ?? null, query.startingAfter ?? null, query.limit + 1);
    return { data: rows.slice(0, query.limit).map(record), has_more: rows.length > query.limit };
  }
}
