import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { licenseArguments, MeteredMetric } from '../../config/tiers';
import { namedParams } from '../../database/prepared';
import { transaction } from '../../database/transaction';
import { MeterWindow } from './meter-window.entity';

/*
 * The meter windows (spec §13): written by licensing's usage write through `billing.meter_usage` (migration
 * 1764002000000-ModuleFunctions.ts, in that write's transaction), closed by the flush, delivered one meter event
 * each by the job queue.
 *
 * Why a window once closed never gains usage: billing.meter_usage picks its window with meter_window_start()
 * (migration 1764000700000), which first takes a shared advisory lock on (organisation, metric) for the rest
 * of its transaction and only then reads the clock. Closing takes that lock exclusively, so it waits for
 * every transaction that picked a window before, and then closes only windows that ended before its own
 * clock reading; a transaction that picks a window after it reads a later clock, so a later window. The
 * value a closed window holds is therefore final, and one meter event per window reports all of it.
 */

/**
 * The advisory locks' first key (the second is the hash of organisation and metric): 'meTR' for picking and
 * closing windows, the next for claiming one to send.
 */
const LOCK_CLASS = 1836348530;
/** The queue's task that delivers one window, and its job key. */
export const METER_WINDOW_TASK = 'meter_window';
/** The queue's task that closes the windows that ended (one job, rescheduled at the next window's end). */
export const METER_FLUSH_TASK = 'meter_flush';

/** A window's key: `<organisation id>:<metric>:<window start>` is also its meter event's identifier. */
export interface WindowKey {
  organisationId: string;
  metric: string;
  /** Unix seconds. */
  windowStart: number;
}

export const meterIdentifier = (k: WindowKey) => `${k.organisationId}:${k.metric}:${k.windowStart}`;

// Adds a window's delivery job; a waiting job of the window is replaced (the key is the window's identifier).
const addJob = (w: string, runAt?: string) =>
  `graphile_worker.add_job('${METER_WINDOW_TASK}',
     json_build_object('organisation_id', ${w}.organisation_id, 'metric', ${w}.metric, 'window_start', ${w}.window_start),
     ${runAt ? `run_at => ${runAt}, ` : ''}job_key => '${METER_WINDOW_TASK}:' || ${w}.organisation_id || ':' || ${w}.metric || ':' || ${w}.window_start)`;

const KEY_WHERE = `organisation_id = $1 AND metric = $2 AND window_start = $3`;

/** After the exclusive lock (a new statement, so a clock read after every earlier writer committed). */
const CLOSE_SQL = `
  WITH closed AS (
    UPDATE meter_windows SET status = 'pending', next_attempt_at = now()
    WHERE organisation_id = $1 AND metric = $2 AND status = 'open' AND window_end <= extract(epoch FROM clock_timestamp())
    RETURNING organisation_id, metric, window_start)
  SELECT count(j.id)::int AS n FROM closed c, LATERAL ${addJob('c')} AS j`;

// A window pending, due, and not under way (an attempt's lease: at most ~40 s, see the service).
const CLAIMABLE = `status = 'pending' AND next_attempt_at <= now() + interval '1 second' AND (leased_until IS NULL OR leased_until < now())`;

/**
 * A claimable window taken for one attempt, unless another window of the organisation and metric is under
 * way: the provider takes one call at a time per customer and meter (else 429). Run under CLAIM_LOCK, so two
 * claims of one organisation's windows never both see the other free.
 */
const CLAIM_SQL = `
  UPDATE meter_windows SET leased_until = now() + interval '2 minutes', attempts = attempts + 1
  WHERE ${KEY_WHERE} AND ${CLAIMABLE}
    AND NOT EXISTS (SELECT 1 FROM meter_windows o WHERE o.organisation_id = $1 AND o.metric = $2 AND o.window_start <> $3
                    AND o.status = 'pending' AND o.leased_until > now())
  RETURNING customer_id AS "customerId", value::float8 AS value, window_end::float8 AS "windowEnd", attempts`;

/** Not claimed because a sibling is under way: its job again in 2 s (not an attempt; nothing failed). */
const LATER_SQL = `
  WITH w AS (
    UPDATE meter_windows SET next_attempt_at = now() + interval '2 seconds' WHERE ${KEY_WHERE} AND ${CLAIMABLE}
    RETURNING organisation_id, metric, window_start, next_attempt_at)
  SELECT (${addJob('w', 'w.next_attempt_at')}).id FROM w`;

/** A failed attempt: the next one scheduled as a new job ($5: its delay in seconds). */
const RETRY_SQL = `
  WITH w AS (
    UPDATE meter_windows SET last_error = $4, leased_until = NULL, next_attempt_at = now() + make_interval(secs => $5::float8)
    WHERE ${KEY_WHERE} AND status = 'pending'
    RETURNING organisation_id, metric, window_start, next_attempt_at)
  SELECT (${addJob('w', 'w.next_attempt_at')}).id FROM w`;

/**
 * Pending windows long overdue lost their job (an instance killed during an attempt leaves it locked for
 * hours): a new job, now. Adding a job with the window's key replaces a waiting one, so this is safe.
 */
const REQUEUE_LOST_SQL = `
  WITH lost AS (
    UPDATE meter_windows SET next_attempt_at = now()
    WHERE (organisation_id, metric, window_start) IN (
      SELECT organisation_id, metric, window_start FROM meter_windows
      WHERE status = 'pending' AND next_attempt_at < now() - interval '5 minutes' AND (leased_until IS NULL OR leased_until < now())
      ORDER BY next_attempt_at LIMIT 500 FOR UPDATE SKIP LOCKED)
    RETURNING organisation_id, metric, window_start)
  SELECT count(*)::int AS n FROM lost, LATERAL ${addJob('lost')} AS j`;

/** The flush job, at `$1` (it runs once per window length; the job key keeps one whatever adds it). */
const SCHEDULE_FLUSH_SQL = `
  SELECT graphile_worker.add_job('${METER_FLUSH_TASK}', '{}'::json, run_at => $1::timestamptz, job_key => '${METER_FLUSH_TASK}',
                                 job_key_mode => $2::text)`;

/** One organisation's figures, per metered metric, for the current period (the license's ai_period for ai_tokens). */
const SUMMARY = namedParams('organisation', 'tiers', 'graceS', 'metrics');
const SUMMARY_SQL = `
  SELECT m.metric,
         COALESCE((SELECT u.used FROM usage_counters u
                   WHERE u.organisation_id = ${SUMMARY.ref.organisation}::uuid AND u.metric = m.metric AND u.period_start = p.period), 0)::float8 AS used,
         COALESCE(sum(w.value) FILTER (WHERE w.status = 'delivered'), 0)::float8 AS reported,
         COALESCE(sum(w.value) FILTER (WHERE w.status IN ('open', 'pending')), 0)::float8 AS pending,
         COALESCE(sum(w.value) FILTER (WHERE w.status = 'failed'), 0)::float8 AS failed
  FROM unnest(${SUMMARY.ref.metrics}::text[]) WITH ORDINALITY AS m(metric, n)
  CROSS JOIN licensing.license_state(${SUMMARY.ref.organisation}::uuid, ${SUMMARY.ref.tiers}::jsonb, ${SUMMARY.ref.graceS}::bigint) s
  -- The counter's period, as licensing's usage write keys it: ai_tokens per billing period, other metrics one row.
  CROSS JOIN LATERAL (SELECT licensing.counter_period(${SUMMARY.ref.tiers}::jsonb, m.metric, s.ai_period) AS period) p
  LEFT JOIN meter_windows w
    ON w.organisation_id = ${SUMMARY.ref.organisation}::uuid AND w.metric = m.metric AND w.window_start >= p.period
  GROUP BY m.metric, m.n, p.period
  ORDER BY m.n`;

/**
 * Delivered windows that ended more than `maxAgeS` ago and began before the current period of their
 * organisation and metric (the period the summary above sums: a gauge's, period 0, is never over), deleted.
 * Open, pending and failed windows are kept whatever their age. Answers how many.
 */
const PRUNE = namedParams('maxAgeS', 'tiers', 'graceS');
const PRUNE_SQL = `
  WITH old AS (
    SELECT DISTINCT organisation_id, metric FROM meter_windows
    WHERE status = 'delivered' AND window_end < extract(epoch FROM now())::bigint - ${PRUNE.ref.maxAgeS}::bigint
  ),
  due AS (
    SELECT o.organisation_id, o.metric, licensing.counter_period(${PRUNE.ref.tiers}::jsonb, o.metric, s.ai_period) AS period
    FROM old o
    CROSS JOIN LATERAL licensing.license_state(o.organisation_id, ${PRUNE.ref.tiers}::jsonb, ${PRUNE.ref.graceS}::bigint) s
  ),
  pruned AS (
    DELETE FROM meter_windows w USING due d
    WHERE (w.organisation_id, w.metric) = (d.organisation_id, d.metric) AND w.status = 'delivered'
      AND w.window_end < extract(epoch FROM now())::bigint - ${PRUNE.ref.maxAgeS}::bigint AND w.window_start < d.period
    RETURNING 1
  )
  SELECT count(*)::int AS n FROM pruned`;

export interface ClaimedWindow {
  customerId: string;
  value: number;
  /** Unix seconds. */
  windowEnd: number;
  /** This attempt's number (1 for the first). */
  attempts: number;
}

/** One organisation's metered metric in its current period, in the metric's units. */
export interface MeterSummaryRow {
  metric: string;
  /** The counter: what was accepted in the period (a gauge such as projects: its value now). */
  used: number;
  /** In windows the provider has. */
  reported: number;
  /** In windows still open or waiting for delivery. */
  pending: number;
  /** In windows the provider refused for good. */
  failed: number;
}

/** Meter windows: the only code (with billing.meter_usage) that reads or writes them. */
@Injectable()
export class MetersRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** (organisation, metric) pairs with an open window that has ended, at most `limit`. */
  async endedOpenWindows(limit: number): Promise<{ organisationId: string; metric: string }[]> {
    return this.db
      .getRepository(MeterWindow)
      .createQueryBuilder('w')
      .select('w.organisationId', 'organisationId')
      .addSelect('w.metric', 'metric')
      .distinct(true)
      .where(`w.status = 'open' AND w.windowEnd <= extract(epoch FROM now())`)
      .limit(limit)
      .getRawMany();
  }

  /**
   * Closes the organisation's ended windows of the metric and queues their delivery; answers how many. Waits
   * at most `lockTimeoutMs` for the usage writes in flight (then throws; the next flush tries again), so a
   * long writer never holds the flush, nor the flush a writer queued behind it.
   */
  async closeEnded(organisationId: string, metric: string, lockTimeoutMs: number): Promise<number> {
    return transaction(this.db, async (m) => {
      await m.query(`SET LOCAL lock_timeout = ${Math.floor(lockTimeoutMs)}`);
      await m.query(`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext($1::text || ':' || $2::text))`, [organisationId, metric]);
      const [row]: { n: number }[] = await m.query(CLOSE_SQL, [organisationId, metric]);
      return row.n;
    });
  }

  /** The flush job due at `runAt`; `replace` moves a waiting one there, `preserve_run_at` keeps its time. */
  async scheduleFlush(runAt: Date, mode: 'replace' | 'preserve_run_at'): Promise<void> {
    await this.db.query(SCHEDULE_FLUSH_SQL, [runAt.toISOString(), mode]);
  }

  /** The window, leased for one attempt when it is pending, due and not under way elsewhere; else undefined. */
  async claim(k: WindowKey): Promise<ClaimedWindow | undefined> {
    return transaction(this.db, async (m) => {
      const values = [k.organisationId, k.metric, k.windowStart];
      await m.query(`SELECT pg_advisory_xact_lock(${LOCK_CLASS + 1}, hashtext($1::text || ':' || $2::text))`, values.slice(0, 2));
      const [[row]]: [ClaimedWindow[], number] = await m.query(CLAIM_SQL, values);
      if (!row) await m.query(LATER_SQL, values);
      return row;
    });
  }

  async markDelivered(k: WindowKey): Promise<void> {
    await this.db
      .getRepository(MeterWindow)
      .update(
        { ...key(k), status: 'pending' },
        { status: 'delivered', deliveredAt: () => 'now()', leasedUntil: null, nextAttemptAt: null, lastError: null },
      );
  }

  /** Refused for good: kept with the reason. */
  async markFailed(k: WindowKey, reason: string): Promise<void> {
    await this.db
      .getRepository(MeterWindow)
      .update({ ...key(k), status: 'pending' }, { status: 'failed', lastError: reason, leasedUntil: null, nextAttemptAt: null });
  }

  /** The next attempt due `delayS` from now, as a new job. */
  async recordRetry(k: WindowKey, error: string, delayS: number): Promise<void> {
    await this.db.query(RETRY_SQL, [k.organisationId, k.metric, k.windowStart, error, delayS]);
  }

  async requeueLost(): Promise<number> {
    const [row]: { n: number }[] = await this.db.query(REQUEUE_LOST_SQL);
    return row.n;
  }

  /** The organisations with meter windows, in id order, after `after`, at most `limit`. */
  async meteredOrganisations(after: string | undefined, limit: number): Promise<string[]> {
    const q = this.db.getRepository(MeterWindow).createQueryBuilder('w').select('DISTINCT w.organisationId', 'id').orderBy('id').limit(limit);
    if (after) q.where('w.organisationId > :after', { after });
    return (await q.getRawMany<{ id: string }>()).map((r) => r.id);
  }

  /** Used, reported, pending and failed per metric in `metrics`, for the organisation's current period. */
  async summary(organisationId: string, metrics: readonly MeteredMetric[]): Promise<MeterSummaryRow[]> {
    return this.db.query(SUMMARY_SQL, SUMMARY.values({ organisation: organisationId, ...licenseArguments(this.config), metrics }));
  }

  /** Deletes the delivered windows past `maxAgeS` that no longer count in a summary (PRUNE_SQL); answers how many. */
  async pruneDelivered(maxAgeS: number): Promise<number> {
    const [row]: { n: number }[] = await this.db.query(PRUNE_SQL, PRUNE.values({ ...licenseArguments(this.config), maxAgeS }));
    return row.n;
  }

  /** Windows not yet delivered (open or pending), for /metrics. */
  async undelivered(): Promise<{ open: number; pending: number }> {
    const rows: { status: 'open' | 'pending'; n: number }[] = await this.db
      .getRepository(MeterWindow)
      .createQueryBuilder('w')
      .select('w.status', 'status')
      .addSelect('count(*)::int', 'n')
      .where(`w.status IN ('open', 'pending')`)
      .groupBy('w.status')
      .getRawMany();
    return { open: rows.find((r) => r.status === 'open')?.n ?? 0, pending: rows.find((r) => r.status === 'pending')?.n ?? 0 };
  }
}

const key = (k: WindowKey) => ({ organisationId: k.organisationId, metric: k.metric, windowStart: String(k.windowStart) });
