import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { CreditGrant, GrantCategory, GrantSource } from './credit-grant.entity';
import { RechargeStatus } from './credit-recharge.entity';

/** A grant as stored, with whether it is past its expiry now (the database's clock). */
export type GrantRow = Pick<
  CreditGrant,
  'id' | 'organisationId' | 'metric' | 'amount' | 'remaining' | 'category' | 'priority' | 'source' | 'reference' | 'effectiveAt' | 'expiresAt' | 'voidedAt' | 'note' | 'request' | 'createdAt'
> & { expired: boolean };

const GRANT_COLUMNS = `
  g.id, g.organisation_id AS "organisationId", g.metric, g.amount, g.remaining, g.category,
  g.priority, g.source, g.reference, g.effective_at AS "effectiveAt", g.expires_at AS "expiresAt", g.voided_at AS "voidedAt",
  g.note, g.request, g.created_at AS "createdAt", COALESCE(g.expires_at <= now(), false) AS expired`;

/** What credits.grant is given (see CreditsService.grant for the rules). */
export interface GrantValues {
  organisationId: string;
  metric: string;
  amount: number;
  category: GrantCategory;
  source: GrantSource;
  reference: string;
  priority: number | null;
  effectiveAt: Date | null;
  expiresAt: Date | null;
  note: string | null;
  request: Record<string, unknown> | null;
  ledgerReference: string | null;
}

export interface AutoRechargeRow {
  metric: string;
  pack: string;
  threshold: number;
  monthlyLimit: number;
  enabled: boolean;
  lastError: string | null;
  rechargesThisMonth: number;
}

export interface RechargeRow {
  id: string;
  organisationId: string;
  metric: string;
  pack: string;
  status: RechargeStatus;
  invoiceId: string | null;
}

/** Recharges created in the calendar month (UTC) that did not fail: what the monthly limit counts. */
const RECHARGES_THIS_MONTH = (setting: string) => `
  (SELECT count(*)::int FROM credit_recharges r
   WHERE r.organisation_id = ${setting}.organisation_id AND r.metric = ${setting}.metric AND r.status <> 'failed'
     AND r.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;

const AUTO_RECHARGE_COLUMNS = `
  a.metric, a.pack, a.threshold, a.monthly_limit AS "monthlyLimit", a.enabled, a.last_error AS "lastError",
  ${RECHARGES_THIS_MONTH('a')} AS "rechargesThisMonth"`;

const RECHARGE_COLUMNS = `r.id, r.organisation_id AS "organisationId", r.metric, r.pack, r.status, r.invoice_id AS "invoiceId"`;

/** The credit tables (grants, ledger, automatic top-ups and their purchases): every statement on them. */
@Injectable()
export class CreditsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** credits.grant: the grant once per (organisation, source, reference), its ledger entry and its notification. */
  async grant(m: EntityManager, g: GrantValues, urls: readonly string[]): Promise<{ grantId: string; created: boolean }> {
    const [row] = await m.query(
      `SELECT grant_id AS "grantId", created FROM credits.grant($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        g.organisationId,
        g.metric,
        g.amount,
        g.category,
        g.source,
        g.reference,
        g.priority,
        g.effectiveAt,
        g.expiresAt,
        g.note,
        g.request === null ? null : JSON.stringify(g.request),
        g.ledgerReference,
        urls,
      ],
    );
    return row;
  }

  async findGrant(m: EntityManager, organisationId: string, grantId: string): Promise<GrantRow | undefined> {
    const [row] = await m.query(`SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.organisation_id = $1 AND g.id = $2`, [organisationId, grantId]);
    return row;
  }

  async autoRecharge(m: EntityManager, organisationId: string, metric: string): Promise<AutoRechargeRow | undefined> {
    const [row] = await m.query(`SELECT ${AUTO_RECHARGE_COLUMNS} FROM credit_auto_recharges a WHERE a.organisation_id = $1 AND a.metric = $2`, [
      organisationId,
      metric,
    ]);
    return row;
  }

  /** Saves the setting, enabled and without an error (a declined one is turned on again by saving it). */
  async saveAutoRecharge(
    m: EntityManager,
    s: { organisationId: string; metric: string; pack: string; threshold: number; monthlyLimit: number },
  ): Promise<AutoRechargeRow> {
    const [row] = await m.query(
      `WITH a AS (
         INSERT INTO credit_auto_recharges AS a (organisation_id, metric, pack, threshold, monthly_limit, enabled, last_error, updated_at)
         VALUES ($1, $2, $3, $4, $5, true, NULL, now())
         ON CONFLICT (organisation_id, metric) DO UPDATE
           SET pack = EXCLUDED.pack, threshold = EXCLUDED.threshold, monthly_limit = EXCLUDED.monthly_limit, enabled = true,
               last_error = NULL, updated_at = now()
         RETURNING a.*)
       SELECT ${AUTO_RECHARGE_COLUMNS} FROM a`,
      [s.organisationId, s.metric, s.pack, s.threshold, s.monthlyLimit],
    );
    return row;
  }

  async deleteAutoRecharge(m: EntityManager, organisationId: string, metric: string): Promise<boolean> {
    const [, count] = await m.query(`DELETE FROM credit_auto_recharges WHERE organisation_id = $1 AND metric = $2`, [organisationId, metric]);
    return count > 0;
  }

  async disableAutoRecharge(m: EntityManager, organisationId: string, metric: string, error: string): Promise<AutoRechargeRow | undefined> {
    const [row] = await m.query(
      `WITH a AS (
         UPDATE credit_auto_recharges a SET enabled = false, last_error = $3, updated_at = now()
         WHERE a.organisation_id = $1 AND a.metric = $2 RETURNING a.*)
       SELECT ${AUTO_RECHARGE_COLUMNS} FROM a`,
      [organisationId, metric, error],
    );
    return row;
  }

  /** The recharge, locked for the rest of the transaction. */
  async lockRecharge(m: EntityManager, rechargeId: string): Promise<RechargeRow | undefined> {
    const [row] = await m.query(`SELECT ${RECHARGE_COLUMNS} FROM credit_recharges r WHERE r.id = $1 FOR UPDATE`, [rechargeId]);
    return row;
  }

  async settleRecharge(m: EntityManager, rechargeId: string, status: Exclude<RechargeStatus, 'pending'>, invoiceId: string | null): Promise<void> {
    await m.query(`UPDATE credit_recharges SET status = $2, invoice_id = COALESCE($3, invoice_id), settled_at = now() WHERE id = $1`, [
      rechargeId,
      status,
      invoiceId,
    ]);
  }
}
