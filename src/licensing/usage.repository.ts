import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { meterWindowSql } from '../billing/meters/meters.repository';
import { AppConfig } from '../config/app-config';
import { MeteredMetric } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { accessSql } from '../identity/access.sql';
import { NotificationsService } from '../notifications/notifications.service';
import { licenseStateSql, licenseStateValues } from './licensing.repository';
import { UsageIdempotencyKey } from './usage-idempotency-key.entity';

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
  RETURNING u.used, (SELECT lim FROM target) AS "limit"`;

/**
 * The usage write; with notifications on, the same statement also writes a `usage.capacity` message when
 * the change crosses the limit (notifications' CTEs after the upsert, `urls` = $6; nothing is written
 * when nothing crosses, so still one round trip). Without, $6 is not part of the statement. With a provider
 * meter configured, billing's CTE adds an accepted increase to its meter window (spec §13), in this statement.
 */
const addUsageSql = (capacity: string | undefined, meter: string | undefined) =>
  capacity || meter
    ? `${TARGET_SQL}, counted AS (${UPSERT_SQL}), ${[capacity, meter].filter(Boolean).join(', ')}
       SELECT c.used, c."limit"${capacity ? ', (SELECT count(*) FROM queued) AS queued' : ''} FROM counted c`
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

export interface UsageChange {
  organisationId: string;
  metric: MeteredMetric;
  amount: number;
}

/** A counter after a change: its new value and the limit in force it was checked against. */
export interface CounterRow {
  used: number;
  limit: number;
}

/** The first report made with an idempotency key, and the answer it got (null until it was applied). */
export type IdempotentReport = Pick<UsageIdempotencyKey, 'metric' | 'amount' | 'response'>;

/** Usage counters and idempotency keys. The counter change is the hot write: hand-written, prepared. */
@Injectable()
export class UsageRepository {
  private readonly notifying: boolean;
  private readonly addSql: string;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
    private readonly notifications: NotificationsService,
  ) {
    const capacity = notifications.capacitySql(ADD.ref, 'counted');
    this.notifying = capacity !== undefined;
    this.addSql = addUsageSql(capacity, meterWindowSql(config, ADD.ref, 'counted'));
  }

  /** Adds `amount` when it fits under the limit in force; undefined when refused (or no such organisation). */
  async add({ organisationId, metric, amount }: UsageChange, m: EntityManager = this.db.manager): Promise<CounterRow | undefined> {
    const values = ADD.values({ ...licenseStateValues(this.config, organisationId), metric, amount, ...this.notifications.capacityValues() });
    const [row] = await preparedQuery<CounterRow>(m, this.addSql, this.notifying ? values : values.slice(0, -1));
    return row;
  }

  /** True when the key is ours to apply; false when a live report already holds it (see `firstReport`). */
  async claimKey(m: EntityManager, { organisationId, metric, amount }: UsageChange, key: string): Promise<boolean> {
    const claimed = await preparedQuery(m, CLAIM_KEY_SQL, [organisationId, key, metric, amount]);
    return claimed.length > 0;
  }

  async firstReport(m: EntityManager, organisationId: string, key: string): Promise<IdempotentReport> {
    return m.getRepository(UsageIdempotencyKey).findOneOrFail({
      select: { metric: true, amount: true, response: true },
      where: { organisationId, key },
    });
  }

  async saveResponse(m: EntityManager, organisationId: string, key: string, response: object): Promise<void> {
    await m.getRepository(UsageIdempotencyKey).update({ organisationId, key }, { response });
  }
}
