import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { MeteredMetric } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { transaction } from '../database/transaction';
import { accessSql } from '../identity/access.sql';
import { organisationNotFound } from '../identity/identity.service';
import { NotificationsService } from '../notifications/notifications.service';
import { licenseStateSql, licenseStateValues } from './license-state.sql';
import { LicensingService } from './licensing.service';


export interface UsageReport {
  organisationId: string;
  metric: MeteredMetric;
  amount: number;
  idempotencyKey?: string;
}

export interface UsageResult {
  metric: MeteredMetric;
  used: number;
  limit: number;
  at_capacity: boolean;
}

/**
 * The whole limit check and the counter change in one statement: the limit in force is computed from
 * the license inside it, and ON CONFLICT DO UPDATE re-evaluates its WHERE against the latest committed
 * counter under the row lock, so concurrent increases (on any number of instances) never overshoot.
 * Decreases (projects only) always apply and stop at 0. No row returned = refused.
 */
const ADD = namedParams('organisation', 'tiers', 'graceS', 'metric', 'amount', 'urls');
const { organisation: $org, metric: $metric, amount: $amount } = ADD.ref;
const TARGET_SQL = `
  WITH ${licenseStateSql(ADD.ref)},
  target AS (
    SELECT (s.limits ->> ${$metric}::text)::bigint AS lim,
           CASE WHEN ${$metric}::text = 'ai_tokens' THEN s.ai_period ELSE 0 END AS period
    FROM state s
    WHERE ${accessSql.organisationExists($org)}
  )`;
const UPSERT_SQL = `
  INSERT INTO usage_counters AS u (organisation_id, metric, period_start, used)
  SELECT ${$org}, ${$metric}::text, t.period, GREATEST(${$amount}::bigint, 0) FROM target t WHERE ${$amount}::bigint <= t.lim
  ON CONFLICT (organisation_id, metric, period_start) DO UPDATE
    SET used = GREATEST(u.used + ${$amount}::bigint, 0), updated_at = now()
    WHERE ${$amount}::bigint < 0 OR u.used + ${$amount}::bigint <= (SELECT lim FROM target)
  RETURNING u.used, (SELECT lim FROM target) AS lim`;

/**
 * The usage write; with notifications on, the same statement also writes a `usage.capacity` message when
 * the change crosses the limit (notifications' CTEs after the upsert, `urls` = $6; nothing is written
 * when nothing crosses, so still one round trip). Without, $6 is not part of the statement.
 */
const addUsageSql = (capacity: string | undefined) =>
  capacity
    ? `${TARGET_SQL}, counted AS (${UPSERT_SQL}), ${capacity}
       SELECT c.used, c.lim, (SELECT count(*) FROM queued) AS queued FROM counted c`
    : `${TARGET_SQL} ${UPSERT_SQL}`;

/**
 * Claims an idempotency key. A key older than 24 hours is taken over as new; a live one held by a
 * concurrent transaction makes this wait until that one commits or rolls back. While here, expired keys
 * of the organisation are swept (SKIP LOCKED: never waits on, or deadlocks with, another writer).
 * $1 organisation, $2 key, $3 metric, $4 amount. A row returned = the key is ours.
 */
const CLAIM_KEY_SQL = `
  WITH swept AS (
    DELETE FROM usage_idempotency_keys
    WHERE organisation_id = $1 AND key IN (
      SELECT key FROM usage_idempotency_keys
      WHERE organisation_id = $1 AND key <> $2 AND created_at < now() - interval '24 hours'
      LIMIT 100 FOR UPDATE SKIP LOCKED))
  INSERT INTO usage_idempotency_keys AS k (organisation_id, key, metric, amount)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (organisation_id, key) DO UPDATE
    SET metric = EXCLUDED.metric, amount = EXCLUDED.amount, response = NULL, created_at = now()
    WHERE k.created_at < now() - interval '24 hours'
  RETURNING 1`;

const FOREIGN_KEY_VIOLATION = '23503';

/** Records usage reported by trusted back-ends, enforcing the limits in force. */
@Injectable()
export class UsageService {
  private readonly notifying: boolean;
  private readonly addSql: string;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
    private readonly licensing: LicensingService,
    private readonly notifications: NotificationsService,
  ) {
    const capacity = notifications.capacitySql(ADD.ref, 'counted');
    this.notifying = capacity !== undefined;
    this.addSql = addUsageSql(capacity);
  }

  async record(report: UsageReport): Promise<UsageResult> {
    if (report.metric === 'ai_tokens' && report.amount < 0) {
      throw new AppException('negative_amount', 'ai_tokens usage can only grow; amount must be positive.');
    }
    try {
      if (!report.idempotencyKey) return await this.add(this.db.manager, report);
      return await transaction(this.db, (m) => this.addOnce(m, report, report.idempotencyKey!));
    } catch (err) {
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw organisationNotFound(report.organisationId);
      throw err;
    }
  }

  /** The key row first, then the counter, in one transaction: a refusal rolls both back. */
  private async addOnce(m: EntityManager, report: UsageReport, key: string): Promise<UsageResult> {
    const claimed = await preparedQuery(m, CLAIM_KEY_SQL, [report.organisationId, key, report.metric, report.amount]);
    if (!claimed.length) {
      const [first] = await m.query(
        `SELECT metric, amount, response FROM usage_idempotency_keys WHERE organisation_id = $1 AND key = $2`,
        [report.organisationId, key],
      );
      if (first.metric !== report.metric || Number(first.amount) !== report.amount) {
        throw new AppException('idempotency_key_reused', `Idempotency key "${key}" was already used for a different report.`);
      }
      return first.response;
    }
    const result = await this.add(m, report);
    await m.query(`UPDATE usage_idempotency_keys SET response = $3 WHERE organisation_id = $1 AND key = $2`, [
      report.organisationId,
      key,
      JSON.stringify(result),
    ]);
    return result;
  }

  private async add(m: EntityManager, { organisationId, metric, amount }: UsageReport): Promise<UsageResult> {
    const values = ADD.values({ ...licenseStateValues(this.config, organisationId), metric, amount, ...this.notifications.capacityValues() });
    const [row] = await preparedQuery(m, this.addSql, this.notifying ? values : values.slice(0, -1));
    if (row) return { metric, used: Number(row.used), limit: Number(row.lim), at_capacity: Number(row.used) >= Number(row.lim) };
    // Refused, or no such organisation: read why (404 from status) and say so.
    const { used, limit } = (await this.licensing.status(organisationId, null, m)).usage[metric];
    throw new AppException(
      'limit_exceeded',
      `Adding ${amount} ${metric} would exceed the limit of ${limit} in force (${used} used); nothing was recorded.`,
    );
  }
}
