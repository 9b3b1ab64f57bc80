import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { subscriptionSql } from '../subscriptions/subscriptions.repository';
import { AppConfig } from '../config/app-config';
import { FREE_TIER } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { licenseStateSql, licenseStateValues } from '../licensing/licensing.repository';
import { expiredOverridesSql } from '../licensing/overrides.sql';
import { deliveryJobKey, DELIVERY_TASK } from './job-queue';
import { NotificationType } from './notification-message.entity';
import { NotificationState } from './notification-state.entity';

/*
 * The notice states and the outbox's messages. A message is written by the statement that decides it: the
 * license comparison below, or licensing's usage write, which embeds `capacityNotificationSql`.
 */

/** Where a statement embedding the fragments below keeps its values (see namedParams). */
export interface OutboxParams {
  organisation: string;
  /** text[]: NOTIFY_URLS. */
  urls: string;
}

// ISO 8601 in UTC with milliseconds, like Date.toISOString().
const NOW_ISO = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The outbox write, as common table expressions for the statement that decides a change, so that the
 * decision, the message, its deliveries (one per URL) and their jobs are one round trip and one
 * transaction. `source` names a CTE with one row per message: version, tier, is_active, is_expired and
 * the columns `extraData` (pairs for json_build_object, e.g. `'metric', s.metric`) uses. `p.organisation`
 * is a parameter, or a column of `s` (`s.organisation_id`) when messages are for several organisations. The
 * statement must reference `queued` (e.g. `(SELECT count(*) FROM queued)`) for the jobs to be added.
 */
export function outboxSql(p: OutboxParams, source: string, type: NotificationType, extraData = ''): string {
  const $org = `${p.organisation}::uuid`;
  return `
  message AS (
    INSERT INTO notification_messages (id, organisation_id, type, version, body)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), ${$org}, '${type}', s.version,
           json_build_object(
             'type', '${type}',
             'timestamp', ${NOW_ISO},
             'data', json_build_object(
               'organisation_id', ${$org},
               'external_id', (SELECT o.external_id FROM organisations o WHERE o.id = ${$org}),
               'tier', s.tier, 'is_active', s.is_active, 'is_expired', s.is_expired, 'version', s.version
               ${extraData ? `, ${extraData}` : ''}))::text
    FROM ${source} s
    RETURNING id
  ),
  delivery AS (
    INSERT INTO notification_deliveries (message_id, url)
    SELECT m.id, u.url FROM message m CROSS JOIN unnest(${p.urls}::text[]) AS u(url)
    RETURNING id
  ),
  queued AS (
    SELECT j.id
    FROM delivery d,
         LATERAL graphile_worker.add_job('${DELIVERY_TASK}', json_build_object('delivery_id', d.id),
                                         job_key => '${deliveryJobKey('')}' || d.id) AS j
  )`;
}

export type CapacityParams = Pick<OutboxParams, 'urls'>;

/**
 * For licensing's usage write (one statement): a `usage.capacity` message for each applied event of CTE
 * `applied` (columns organisation_id, metric, n (its order), before, used, "limit") that moved its metric
 * across the limit in force, in event order. The values before and after are exact: the counter rows are
 * locked by the write. Each organisation's notice-state row is bumped once by its number of crossings,
 * under its lock (rows taken in organisation order, as the write takes its counters); its messages get the
 * versions in between, and their license fields are the license last notified, which is what a receiver
 * holds at the previous version. No crossing: the CTEs below do nothing.
 */
export function capacityNotificationSql(p: CapacityParams, applied: string): string {
  return `
  crossed AS (
    SELECT a.organisation_id, a.metric, a.used, a."limit", a.used >= a."limit" AS at_capacity,
           row_number() OVER (PARTITION BY a.organisation_id ORDER BY a.n) AS rank,
           count(*) OVER (PARTITION BY a.organisation_id) AS crossings
    FROM ${applied} a
    WHERE (a.used >= a."limit") <> (a.before >= a."limit")
  ),
  bumped AS (
    INSERT INTO notification_states AS n (organisation_id, version)
    SELECT organisation_id, max(crossings) FROM crossed GROUP BY organisation_id ORDER BY organisation_id
    ON CONFLICT (organisation_id) DO UPDATE SET version = n.version + EXCLUDED.version
    RETURNING n.organisation_id, n.version, n.tier, n.is_active, n.is_expired
  ),
  capacity AS (
    SELECT c.organisation_id, b.version - c.crossings + c.rank AS version, b.tier, b.is_active, b.is_expired,
           c.metric, c.used, c."limit", c.at_capacity
    FROM crossed c JOIN bumped b USING (organisation_id)
  ),
  ${outboxSql({ ...p, organisation: 's.organisation_id' }, 'capacity', 'usage.capacity', `'metric', s.metric, 'used', s.used, 'limit', s."limit", 'at_capacity', s.at_capacity`)}`;
}

/**
 * Locks the organisation's notice-state row, creating it (free, active, not expired, version 0) when
 * missing. `WHERE false` updates nothing, but ON CONFLICT DO UPDATE locks the existing row all the same.
 * Every message of the organisation is decided under this lock, so versions follow commit order.
 */
const LOCK_SQL = `
  INSERT INTO notification_states AS n (organisation_id) VALUES ($1)
  ON CONFLICT (organisation_id) DO UPDATE SET version = n.version WHERE false`;

/**
 * What a receiver holds besides the tier and the flags: the features, the limits in force and the seats
 * (spec §10, §11.5, §12), as one jsonb value. A notice state from before these were recorded (NULL) holds
 * what its tier implied: that tier's features and limits (the free tier's when not active), no seats.
 */
const entitlementsSql = (state: string) =>
  `jsonb_build_object('features', ${state}.features, 'limits', ${state}.limits, 'seats', ${state}.seats)`;
const impliedEntitlementsSql = (tiers: string) => `
  (SELECT jsonb_build_object('features', p.plan -> 'features', 'limits', p.plan -> 'limits', 'seats', NULL)
   FROM (SELECT CASE WHEN n.is_active AND ${tiers}::jsonb ? n.tier THEN ${tiers}::jsonb -> n.tier
                     ELSE ${tiers}::jsonb -> '${FREE_TIER}' END AS plan) p)`;

/**
 * After the lock (a new statement, so a new snapshot: it sees every change committed before the lock was
 * granted): the license now (tier, flags, features, limits in force, seats), compared with the one last
 * notified; when it differs, the version is bumped and the `license.updated` message, its deliveries and
 * their jobs are written. One round trip.
 */
const CHANGE = namedParams('organisation', 'tiers', 'graceS', 'urls');
const CHANGE_SQL = `
  WITH ${licenseStateSql(CHANGE.ref)},
  changed AS (
    SELECT s.tier, s.is_active, s.is_expired, ${entitlementsSql('s')} AS entitlements, n.version + 1 AS version
    FROM state s JOIN notification_states n ON n.organisation_id = ${CHANGE.ref.organisation}::uuid
    WHERE (s.tier, s.is_active, s.is_expired, ${entitlementsSql('s')})
          IS DISTINCT FROM (n.tier, n.is_active, n.is_expired, COALESCE(n.entitlements, ${impliedEntitlementsSql(CHANGE.ref.tiers)}))
  ),
  bumped AS (
    UPDATE notification_states n
    SET version = c.version, tier = c.tier, is_active = c.is_active, is_expired = c.is_expired,
        entitlements = c.entitlements, checked_at = now()
    FROM changed c WHERE n.organisation_id = ${CHANGE.ref.organisation}::uuid
    RETURNING n.version, n.tier, n.is_active, n.is_expired, n.entitlements
  ),
  ${outboxSql(CHANGE.ref, 'bumped', 'license.updated', `'features', s.entitlements -> 'features', 'seats', s.entitlements -> 'seats'`)}
  SELECT (SELECT version FROM bumped) AS version, (SELECT count(*) FROM queued)::int AS queued`;

/**
 * A `trial.ending` message (spec §11.5): the subscription's tier, its trial end and whether it has a
 * payment method, with the next version and the license last notified (it changes no license).
 */
const TRIAL = namedParams('organisation', 'urls', 'tier', 'trialEnd', 'hasPaymentMethod');
const TRIAL_SQL = `
  WITH bumped AS (
    UPDATE notification_states n SET version = n.version + 1 WHERE n.organisation_id = ${TRIAL.ref.organisation}::uuid
    RETURNING n.version, ${TRIAL.ref.tier}::text AS tier, n.is_active, n.is_expired
  ),
  ${outboxSql(TRIAL.ref, 'bumped', 'trial.ending', `'trial_end', ${TRIAL.ref.trialEnd}::bigint, 'has_payment_method', ${TRIAL.ref.hasPaymentMethod}::boolean`)}
  SELECT (SELECT version FROM bumped) AS version, (SELECT count(*) FROM queued)::int AS queued`;

/**
 * Paid licenses last notified active whose past_due subscription's grace has run out since they were last
 * compared: no event marks that moment, so the minutely job looks for them (among billing's license
 * candidates, as licensing.repository.ts reads them). Grace counts from past_due_since in whole seconds of
 * now() rounded, so a comparison within the second after the end may still find it in grace: such a row is
 * looked at again.
 */
const GRACE_EXPIRED_SQL = `
  SELECT n.organisation_id AS "organisationId" FROM notification_states n
  WHERE n.is_active AND n.tier <> '${FREE_TIER}' AND EXISTS (
    SELECT 1 FROM (${subscriptionSql.licenseCandidates('n.organisation_id')}) s
    CROSS JOIN LATERAL (SELECT COALESCE(s.past_due_since, s.period_end) + $1::bigint AS grace_end) g
    WHERE s.status = 'past_due' AND g.grace_end < extract(epoch FROM now())::bigint
      AND n.checked_at < to_timestamp(g.grace_end + 1))
  LIMIT 1000`;

/**
 * Organisations with an override that expired since they were last compared (or never were): an expiry
 * takes effect by itself (the license SQL compares expires_at with now()), but is notified by the minutely
 * job within a minute.
 */
const OVERRIDES_EXPIRED_SQL = expiredOverridesSql((org) => `(SELECT n.checked_at FROM notification_states n WHERE n.organisation_id = ${org})`);

/** Messages are kept 30 days once no delivery of theirs is pending. */
const PRUNE_SQL = `
  DELETE FROM notification_messages WHERE id IN (
    SELECT m.id FROM notification_messages m
    WHERE m.created_at < now() - interval '30 days'
      AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.message_id = m.id AND d.status = 'pending')
    LIMIT 1000)`;

@Injectable()
export class NotificationsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** Takes the organisation's notice-state row lock (see LOCK_SQL) for the rest of the transaction `m`. */
  async lockState(m: EntityManager, organisationId: string): Promise<void> {
    await preparedQuery(m, LOCK_SQL, [organisationId]);
  }

  /**
   * Compares the license now with the one last notified and, when it differs, writes a `license.updated`
   * message to every NOTIFY_URLS receiver. Answers the new version, or undefined when nothing changed.
   */
  async writeLicenseChange(m: EntityManager, organisationId: string): Promise<number | undefined> {
    const values = CHANGE.values({ ...licenseStateValues(this.config, organisationId), urls: this.config.notifyUrls });
    const [row] = await preparedQuery<{ version: number | null }>(m, CHANGE_SQL, values);
    return row.version ?? undefined;
  }

  /** Writes a `trial.ending` message (after lockState); answers its version. */
  async writeTrialEnding(m: EntityManager, organisationId: string, trial: { tier: string; trialEnd: number; hasPaymentMethod: boolean }): Promise<number> {
    const values = TRIAL.values({ organisation: organisationId, urls: this.config.notifyUrls, ...trial });
    const [row] = await preparedQuery<{ version: number }>(m, TRIAL_SQL, values);
    return row.version;
  }

  /** The organisations whose paid license may have lapsed with a grace period (at most 1000). */
  async graceExpired(): Promise<string[]> {
    const rows: { organisationId: string }[] = await this.db.query(GRACE_EXPIRED_SQL, [this.config.gracePeriodDays * 86_400]);
    return rows.map((r) => r.organisationId);
  }

  /** The organisations with an override that expired since they were last compared (at most 1000). */
  async overridesExpired(): Promise<string[]> {
    const rows: { organisation_id: string }[] = await this.db.query(OVERRIDES_EXPIRED_SQL);
    return rows.map((r) => r.organisation_id);
  }

  async markChecked(m: EntityManager, organisationId: string): Promise<void> {
    await m.getRepository(NotificationState).update({ organisationId }, { checkedAt: () => 'now()' });
  }

  /** Deletes up to 1000 messages past their 30 days. */
  async pruneMessages(): Promise<void> {
    await this.db.query(PRUNE_SQL);
  }
}
