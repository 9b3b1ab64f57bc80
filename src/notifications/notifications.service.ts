import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { subscriptionSql } from '../billing/subscription.sql';
import { AppConfig } from '../config/app-config';
import { FREE_TIER } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { transaction } from '../database/transaction';
import { licenseStateSql, licenseStateValues } from '../licensing/licensing.repository';
import { deliveryJobKey, DELIVERY_TASK } from './job-queue';
import { capacityNotificationSql, outboxSql } from './notification.sql';

/**
 * Locks the organisation's notice-state row, creating it (free, active, not expired, version 0) when
 * missing. `WHERE false` updates nothing, but ON CONFLICT DO UPDATE locks the existing row all the same.
 * Every message of the organisation is decided under this lock, so versions follow commit order.
 */
const LOCK_SQL = `
  INSERT INTO notification_states AS n (organisation_id) VALUES ($1)
  ON CONFLICT (organisation_id) DO UPDATE SET version = n.version WHERE false`;

/**
 * After the lock (a new statement, so a new snapshot: it sees every change committed before the lock was
 * granted): the license now, compared with the one last notified; when it differs, the version is bumped
 * and the `license.updated` message, its deliveries and their jobs are written. One round trip.
 */
const CHANGE = namedParams('organisation', 'tiers', 'graceS', 'urls');
const CHANGE_SQL = `
  WITH ${licenseStateSql(CHANGE.ref)},
  changed AS (
    SELECT s.tier, s.is_active, s.is_expired, n.version + 1 AS version
    FROM state s JOIN notification_states n ON n.organisation_id = ${CHANGE.ref.organisation}::uuid
    WHERE (s.tier, s.is_active, s.is_expired) IS DISTINCT FROM (n.tier, n.is_active, n.is_expired)
  ),
  bumped AS (
    UPDATE notification_states n
    SET version = c.version, tier = c.tier, is_active = c.is_active, is_expired = c.is_expired, checked_at = now()
    FROM changed c WHERE n.organisation_id = ${CHANGE.ref.organisation}::uuid
    RETURNING n.version, n.tier, n.is_active, n.is_expired
  ),
  ${outboxSql(CHANGE.ref, 'bumped', 'license.updated')}
  SELECT (SELECT version FROM bumped) AS version, (SELECT count(*) FROM queued)::int AS queued`;

/**
 * Paid licenses last notified active whose past_due subscription's grace has run out since they were last
 * compared: no event marks that moment, so the minutely job looks for them (among billing's license
 * candidates, as licensing.repository.ts reads them). Grace counts from past_due_since in whole seconds of
 * now() rounded, so a comparison within the second after the end may still find it in grace: such a row is
 * looked at again.
 */
const GRACE_EXPIRED_SQL = `
  SELECT n.organisation_id FROM notification_states n
  WHERE n.is_active AND n.tier <> '${FREE_TIER}' AND EXISTS (
    SELECT 1 FROM (${subscriptionSql.licenseCandidates('n.organisation_id')}) s
    CROSS JOIN LATERAL (SELECT COALESCE(s.past_due_since, s.period_end) + $1::bigint AS grace_end) g
    WHERE s.status = 'past_due' AND g.grace_end < extract(epoch FROM now())::bigint
      AND n.checked_at < to_timestamp(g.grace_end + 1))
  LIMIT 1000`;

/**
 * A pending delivery long overdue lost its job (an instance killed during an attempt leaves the job locked
 * for hours): a new job, now. Adding a job with the delivery's key replaces a waiting one, so this is safe.
 */
const REQUEUE_LOST_SQL = `
  WITH lost AS (
    UPDATE notification_deliveries SET next_attempt_at = now()
    WHERE id IN (SELECT id FROM notification_deliveries
                 WHERE status = 'pending' AND next_attempt_at < now() - interval '5 minutes'
                 ORDER BY next_attempt_at LIMIT 500 FOR UPDATE SKIP LOCKED)
    RETURNING id)
  SELECT count(*)::int AS n
  FROM lost, LATERAL graphile_worker.add_job('${DELIVERY_TASK}', json_build_object('delivery_id', lost.id),
                                             job_key => '${deliveryJobKey('')}' || lost.id) AS j`;

/** Messages are kept 30 days once no delivery of theirs is pending. */
const PRUNE_SQL = `
  DELETE FROM notification_messages WHERE id IN (
    SELECT m.id FROM notification_messages m
    WHERE m.created_at < now() - interval '30 days'
      AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.message_id = m.id AND d.status = 'pending')
    LIMIT 1000)`;

/**
 * Decides the outbound notifications (SPEC 10) inside the transaction of each change: a license that may
 * have changed (webhook events, replays, reconciliation corrections, a grace period running out) and,
 * through the SQL embedded in licensing's usage write, a metric crossing its limit. With NOTIFY_URLS
 * unset it does nothing at all (no rows, no cost); see the README for what the first change after
 * configuring it is compared with.
 */
@Injectable()
export class NotificationsService {
  private readonly logger = new Logger('Notifications');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  get enabled(): boolean {
    return this.config.notifyUrls.length > 0;
  }

  /**
   * In the caller's transaction: when the organisation's license (tier, is_active, is_expired) differs
   * from the one last notified, writes a `license.updated` message. Two round trips; answers the new
   * version, or undefined when nothing changed.
   */
  async licenseMayHaveChanged(manager: EntityManager, organisationId: string): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    await preparedQuery(manager, LOCK_SQL, [organisationId]);
    const [row] = await preparedQuery(
      manager,
      CHANGE_SQL,
      CHANGE.values({ ...licenseStateValues(this.config, organisationId), urls: this.config.notifyUrls }),
    );
    return row.version ?? undefined;
  }

  /**
   * The CTEs licensing's usage write embeds after its counter upsert `counted` (columns used, "limit"), or
   * undefined when nothing is sent. Their parameters are the write's own plus `urls` (capacityValues).
   */
  capacitySql(params: { organisation: string; metric: string; amount: string; urls: string }, counted: string): string | undefined {
    return this.enabled ? capacityNotificationSql(params, counted) : undefined;
  }

  capacityValues(): { urls: string[] } {
    return { urls: this.config.notifyUrls };
  }

  /** Run once a minute (on one instance): grace expiries, lost jobs, old messages. Each step on its own. */
  async minutely(): Promise<void> {
    for (const [what, step] of [
      ['grace expiry', () => this.graceExpiries()],
      ['lost-job sweep', () => this.db.query(REQUEUE_LOST_SQL)],
      ['pruning', () => this.db.query(PRUNE_SQL)],
    ] as const) {
      await step().catch((err: Error) => this.logger.error({ msg: `notifications: ${what} failed; trying again in a minute`, err }));
    }
  }

  /** Notifies the licenses whose grace period ran out since they were last compared; answers how many changed. */
  async graceExpiries(): Promise<number> {
    if (!this.enabled) return 0;
    const rows: { organisation_id: string }[] = await this.db.query(GRACE_EXPIRED_SQL, [this.config.gracePeriodDays * 86_400]);
    let changed = 0;
    for (const { organisation_id: org } of rows) {
      const version = await transaction(this.db, async (m) => {
        const v = await this.licenseMayHaveChanged(m, org);
        // Compared now: looked at again only after a later expiry (another subscription may keep it active).
        await m.query(`UPDATE notification_states SET checked_at = now() WHERE organisation_id = $1`, [org]);
        return v;
      });
      if (version !== undefined) changed++;
    }
    return changed;
  }
}
