import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { EntitlementOverride } from './entitlement-override.entity';

/** An override as stored (see EntitlementOverride). */
export type OverrideRow = Pick<EntitlementOverride, 'name' | 'value' | 'expiresAt' | 'note' | 'createdAt'>;

const COLUMNS = `name, value, expires_at AS "expiresAt", note, created_at AS "createdAt"`;

const UPSERT_SQL = `
  INSERT INTO entitlement_overrides AS o (organisation_id, name, value, expires_at, note)
  VALUES ($1, $2, $3::jsonb, $4, $5)
  ON CONFLICT (organisation_id, name) DO UPDATE
    SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, note = EXCLUDED.note, created_at = now()
  RETURNING ${COLUMNS}`;

/** Per-organisation overrides (spec §12); the license reads them through licensing.live_overrides. */
@Injectable()
export class OverridesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Before a limit changes (transaction `m`): waits for every usage write under way to commit, and holds
   * new ones until `m` commits. A usage write is one statement that computes the limit in force and
   * writes the counter; PostgreSQL takes its table lock (ROW EXCLUSIVE, which SHARE excludes) before the
   * statement's snapshot, so a write held here sees the new limit once it runs, and no write checked
   * against the old limit commits after the new one. Reads are not held.
   */
  async holdUsageWrites(m: EntityManager): Promise<void> {
    await m.query('LOCK TABLE usage_counters IN SHARE MODE');
  }

  async find(m: EntityManager, organisationId: string, name: string): Promise<OverrideRow | undefined> {
    const [row] = await m.query(`SELECT ${COLUMNS} FROM entitlement_overrides WHERE organisation_id = $1 AND name = $2`, [organisationId, name]);
    return row;
  }

  async upsert(m: EntityManager, organisationId: string, o: Pick<OverrideRow, 'name' | 'value' | 'expiresAt' | 'note'>): Promise<OverrideRow> {
    const [row] = await m.query(UPSERT_SQL, [organisationId, o.name, JSON.stringify(o.value), o.expiresAt, o.note]);
    return row;
  }

  async remove(m: EntityManager, organisationId: string, name: string): Promise<OverrideRow | undefined> {
    const [rows] = await m.query(`DELETE FROM entitlement_overrides WHERE organisation_id = $1 AND name = $2 RETURNING ${COLUMNS}`, [
      organisationId,
      name,
    ]);
    return rows[0];
  }

  /** Every override of the organisation, expired ones too, by name; undefined when it does not exist. */
  async list(organisationId: string): Promise<OverrideRow[] | undefined> {
    const [row] = await this.db.query(
      `SELECT COALESCE((SELECT json_agg(x ORDER BY x.name) FROM (SELECT ${COLUMNS} FROM entitlement_overrides WHERE organisation_id = $1) x), '[]') AS overrides
       FROM identity.organisation($1)`,
      [organisationId],
    );
    return row?.overrides;
  }
}
