import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AuditEntry } from './audit-entry.entity';

export type NewAuditEntry = Pick<AuditEntry, 'actor' | 'action' | 'organisationId' | 'before' | 'after' | 'requestId'>;

/**
 * One page, newest first: keyset on the id (`starting_after` is the last id of the previous page), one row
 * more than asked to tell `has_more`. Served by the primary key, or (organisation_id, id) when filtered.
 */
const PAGE_SQL = `
  SELECT id::text AS id, at, actor, action, organisation_id AS "organisationId", before, after, request_id AS "requestId"
  FROM audit_log
  WHERE ($1::uuid IS NULL OR organisation_id = $1) AND ($2::bigint IS NULL OR id < $2)
  ORDER BY audit_log.id DESC LIMIT $3`;

/** The audit log: appended to inside the caller's transaction, read a page at a time. */
@Injectable()
export class AuditRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(m: EntityManager, entry: NewAuditEntry): Promise<void> {
    // The JSON snapshots are plain objects; TypeORM's deep-partial type cannot express `unknown` values.
    await m.getRepository(AuditEntry).insert(entry as QueryDeepPartialEntity<AuditEntry>);
  }

  page(organisationId: string | null, startingAfter: string | null, rows: number): Promise<AuditEntry[]> {
    return this.db.query(PAGE_SQL, [organisationId, startingAfter, rows]);
  }

  async find(id: string): Promise<AuditEntry | undefined> {
    const rows = await this.db.query<AuditEntry[]>(
      `SELECT id::text AS id, at, actor, action, organisation_id AS "organisationId", before, after, request_id AS "requestId" FROM audit_log WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /** The entries that set each named override's current value: the newest `override.set` of each name. */
  overrideSets(organisationId: string, names: string[]): Promise<AuditEntry[]> {
    return this.db.query(
      `SELECT DISTINCT ON (after ->> 'name') id::text AS id, at, actor, action, organisation_id AS "organisationId", before, after, request_id AS "requestId"
       FROM audit_log WHERE organisation_id = $1 AND action = 'override.set' AND after ->> 'name' = ANY($2::text[])
       ORDER BY after ->> 'name', id DESC`,
      [organisationId, names],
    );
  }
}
