import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, licenseArguments } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { NotificationType } from './notification-message.entity';
import { NotificationState } from './notification-state.entity';

/*
 * The notice states and the outbox's messages. A message is written by the statement that decides it, through
 * notifications.enqueue (the message, a delivery per URL and their jobs; migration 1764002000000): the license
 * comparison and the trial notice below, and notifications.capacity_crossed, which licensing's usage write calls
 * with the events that moved a metric across its limit.
 */

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
 * what its tier implied: that tier's plan in force (licensing.plan_in_force), no seats.
 */
const entitlementsSql = (state: string) =>
  `jsonb_build_object('features', ${state}.features, 'limits', ${state}.limits, 'seats', ${state}.seats, 'plan_version', ${state}.plan_version)`;
const impliedEntitlementsSql = (tiers: string) => `
  (SELECT jsonb_build_object('features', p.features, 'limits', p.limits, 'seats', NULL)
   FROM licensing.plan_in_force(${tiers}::jsonb, n.tier, n.is_active, NULL) p)`;
/**
 * The state last notified, compared with the license now. One notified before plan versions (no `plan_version`)
 * is taken to have been on the version the license is on now: only a change of version notifies.
 */
const notifiedSql = (tiers: string, now: string) => `
  (SELECT CASE WHEN e ? 'plan_version' THEN e ELSE e || jsonb_build_object('plan_version', ${now}.plan_version) END
   FROM (SELECT COALESCE(n.entitlements, ${impliedEntitlementsSql(tiers)}) AS e) x)`;

/**
 * After the lock (a new statement, so a new snapshot: it sees every change committed before the lock was
 * granted): the license now (licensing.license_state: tier, flags, features, limits in force, seats), compared
 * with the one last notified; when it differs, the version is bumped and the `license.updated` message, its
 * deliveries and their jobs are written. One round trip.
 */
const CHANGE = namedParams('organisation', 'tiers', 'graceS', 'urls');
const { organisation: $org, tiers: $tiers, graceS: $grace, urls: $urls } = CHANGE.ref;
const CHANGE_SQL = `
  WITH changed AS (
    SELECT s.tier, s.is_active, s.is_expired, ${entitlementsSql('s')} AS entitlements, n.version + 1 AS version
    FROM licensing.license_state(${$org}::uuid, ${$tiers}::jsonb, ${$grace}::bigint) s
    JOIN notification_states n ON n.organisation_id = ${$org}::uuid
    WHERE (s.tier, s.is_active, s.is_expired, ${entitlementsSql('s')})
          IS DISTINCT FROM (n.tier, n.is_active, n.is_expired, ${notifiedSql($tiers, 's')})
  ),
  bumped AS (
    UPDATE notification_states n
    SET version = c.version, tier = c.tier, is_active = c.is_active, is_expired = c.is_expired,
        entitlements = c.entitlements, checked_at = now()
    FROM changed c WHERE n.organisation_id = ${$org}::uuid
    RETURNING n.version, n.tier, n.is_active, n.is_expired, n.entitlements
  )
  SELECT (SELECT version FROM bumped) AS version,
         COALESCE((SELECT notifications.enqueue(${$org}::uuid, 'license.updated', b.version, b.tier, b.is_active, b.is_expired,
                                                json_build_object('features', b.entitlements -> 'features', 'seats', b.entitlements -> 'seats',
                                                                  'plan_version', b.entitlements -> 'plan_version'),
                                                ${$urls}::text[])
                   FROM bumped b), 0) AS queued`;

/**
 * A `trial.ending` message (spec §11.5): the subscription's tier, its trial end and whether it has a
 * payment method, with the next version and the license last notified (it changes no license).
 */
const TRIAL = namedParams('organisation', 'urls', 'tier', 'trialEnd', 'hasPaymentMethod');
const TRIAL_SQL = `
  WITH bumped AS (
    UPDATE notification_states n SET version = n.version + 1 WHERE n.organisation_id = ${TRIAL.ref.organisation}::uuid
    RETURNING n.version, n.is_active, n.is_expired
  )
  SELECT (SELECT version FROM bumped) AS version,
         COALESCE((SELECT notifications.enqueue(${TRIAL.ref.organisation}::uuid, 'trial.ending', b.version, ${TRIAL.ref.tier}::text,
                                                b.is_active, b.is_expired,
                                                json_build_object('trial_end', ${TRIAL.ref.trialEnd}::bigint,
                                                                  'has_payment_method', ${TRIAL.ref.hasPaymentMethod}::boolean),
                                                ${TRIAL.ref.urls}::text[])
                   FROM bumped b), 0) AS queued`;

/**
 * Paid licenses last notified active whose past_due subscription's grace has run out since they were last
 * compared: no event marks that moment, so the minutely job looks for them, by each license candidate's grace
 * (subscriptions.of_organisation). Grace is compared with now() in whole seconds, so a comparison within the
 * second after the end may still find it in grace: such a row is looked at again.
 */
const GRACE_EXPIRED_SQL = `
  SELECT n.organisation_id AS "organisationId" FROM notification_states n
  WHERE n.is_active AND n.tier <> '${FREE_TIER}' AND EXISTS (
    SELECT 1 FROM subscriptions.of_organisation(n.organisation_id, $1::bigint) s
    WHERE s.not_candidate IS NULL AND s.grace_ends_at < extract(epoch FROM now())::bigint
      AND n.checked_at < to_timestamp(s.grace_ends_at + 1))
  LIMIT 1000`;

/**
 * Organisations with an override that expired since they were last compared (or never were): an expiry
 * takes effect by itself (the license compares expires_at with now()), but is notified by the minutely
 * job within a minute.
 */
const OVERRIDES_EXPIRED_SQL = `
  SELECT DISTINCT o.organisation_id FROM licensing.expired_overrides() o
  LEFT JOIN notification_states n ON n.organisation_id = o.organisation_id
  WHERE n.checked_at IS NULL OR o.expires_at > n.checked_at
  LIMIT 1000`;

/** One message of any type with the next version (notifications.notice, migration 1764002180000-Credits.ts). */
const NOTICE_SQL = `SELECT notifications.notice($1::uuid, $2::text, $3::json, $4::text[]) AS version`;

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
    const values = CHANGE.values({ organisation: organisationId, ...licenseArguments(this.config), urls: this.config.notifyUrls });
    const [row] = await preparedQuery<{ version: number | null }>(m, CHANGE_SQL, values);
    return row.version ?? undefined;
  }

  /** Writes a `trial.ending` message (after lockState); answers its version. */
  async writeTrialEnding(m: EntityManager, organisationId: string, trial: { tier: string; trialEnd: number; hasPaymentMethod: boolean }): Promise<number> {
    const values = TRIAL.values({ organisation: organisationId, urls: this.config.notifyUrls, ...trial });
    const [row] = await preparedQuery<{ version: number }>(m, TRIAL_SQL, values);
    return row.version;
  }

  /** Writes a message of `type` whose data is the license last notified and `data`; answers its version. */
  async writeNotice(m: EntityManager, organisationId: string, type: NotificationType, data: Record<string, unknown>): Promise<number> {
    const [row] = await preparedQuery<{ version: number }>(m, NOTICE_SQL, [organisationId, type, JSON.stringify(data), this.config.notifyUrls]);
    return row.version;
  }

  /** The organisations whose paid license may have lapsed with a grace period (at most 1000). */
  async graceExpired(): Promise<string[]> {
    const rows: { organisationId: string }[] = await this.db.query(GRACE_EXPIRED_SQL, [licenseArguments(this.config).graceS]);
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
