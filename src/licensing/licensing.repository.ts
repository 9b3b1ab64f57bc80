import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { subscriptionSql } from '../billing/provider-subscriptions.repository';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, limitsOf } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { accessSql } from '../identity/access.sql';

/*
 * Licensing's reads: the license state (derived from billing's subscriptions) and the status read built on
 * it. The license state is also a fragment of the usage write (usage.repository.ts) and of notifications'
 * license comparison, so that each decides inside its own statement.
 */

/** Where a statement embedding `licenseStateSql` keeps the values of `licenseStateValues` (see namedParams). */
export interface LicenseStateParams {
  organisation: string;
  /**
   * The tier table (jsonb, tier → its integer limits by metric, `rank`, its place in the table, and
   * `per_seat`; a per-seat tier's `users` is its `max`).
   */
  tiers: string;
  /** The grace period in seconds. */
  graceS: string;
}

/**
 * The license state of an organisation, as SQL common table expressions, so that the status read and the
 * usage write compute the tier, the flags and the limits in force inside the very statement that uses
 * them (no read-then-write gap for a concurrent webhook to slip into).
 *
 * The license follows the organisation's best subscription (spec §5): the highest tier (tier-table order)
 * among those live now (active, trialing, or past_due within GRACE_PERIOD_DAYS of when it became
 * past_due); when none is live, the one whose last event is newest, which then shows as not active and,
 * when its paid period ended without renewal, expired. No subscription: free, active, not expired.
 *
 * `state` has one row (also for an organisation without subscriptions, or one that does not exist):
 *   tier, is_active, is_expired, tier_known, limits (jsonb of the limits in force), seats (the
 *   subscription's seat count when its tier is sold per seat, else null), ai_period (start of the
 *   ai_tokens billing period, Unix seconds).
 *
 * A per-seat tier's `users` limit in force is the subscription's seats, at most the tier's `max` (spec §11.5).
 */
export const licenseStateSql = ({ organisation: $org, tiers: $tiers, graceS: $grace }: LicenseStateParams) => `
  license AS (
    SELECT COALESCE(b.tier, '${FREE_TIER}') AS tier, b.status, b.period_start, b.period_end, b.in_grace, b.seats, n.now_s
    FROM (SELECT extract(epoch FROM now())::bigint AS now_s) AS n
    LEFT JOIN LATERAL (
      SELECT c.*,
             c.status = 'past_due' AND n.now_s <= COALESCE(c.past_due_since, c.period_end) + ${$grace}::bigint AS in_grace
      FROM (${subscriptionSql.licenseCandidates(`${$org}::uuid`)}) AS c
      ORDER BY (c.status IN ('active', 'trialing')
                OR (c.status = 'past_due' AND n.now_s <= COALESCE(c.past_due_since, c.period_end) + ${$grace}::bigint)) DESC,
               (${$tiers}::jsonb -> c.tier ->> 'rank')::int DESC NULLS LAST,
               c.last_event_created DESC NULLS LAST
      LIMIT 1
    ) AS b ON true
  ),
  flags AS (
    SELECT license.*,
           COALESCE(tier = '${FREE_TIER}' OR status IN ('active', 'trialing') OR in_grace, false) AS is_active,
           COALESCE(
             tier <> '${FREE_TIER}' AND (
               status IN ('unpaid', 'incomplete_expired', 'paused', 'canceled')
               OR (status = 'past_due' AND NOT in_grace)),
             false) AS is_expired,
           ${$tiers}::jsonb ? tier AS tier_known,
           COALESCE((${$tiers}::jsonb -> tier ->> 'per_seat')::boolean, false) AS per_seat
    FROM license
  ),
  state AS (
    SELECT tier, is_active, is_expired, tier_known,
           CASE WHEN is_active AND tier_known THEN ${$tiers}::jsonb -> tier ELSE ${$tiers}::jsonb -> '${FREE_TIER}' END
             || CASE WHEN is_active AND per_seat AND seats IS NOT NULL
                     THEN jsonb_build_object('users', LEAST(seats, (${$tiers}::jsonb -> tier ->> 'users')::bigint)) ELSE '{}' END
             AS limits,
           CASE WHEN per_seat THEN seats END AS seats,
           CASE WHEN tier <> '${FREE_TIER}' AND is_active AND period_start IS NOT NULL THEN period_start
                ELSE extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::bigint
           END AS ai_period
    FROM flags
  )`;

// The tier table as the jsonb parameter, serialised once per configuration rather than per request.
const tiersJson = new WeakMap<AppConfig, string>();

/** The values for the parameters named in LicenseStateParams. */
export function licenseStateValues(config: AppConfig, organisationId: string): Record<keyof LicenseStateParams, unknown> {
  let tiers = tiersJson.get(config);
  if (tiers === undefined) {
    tiers = JSON.stringify(Object.fromEntries(Object.entries(config.tiers).map(([tier, plan], rank) => [tier, { ...limitsOf(plan), rank, per_seat: plan.perSeat }])));
    tiersJson.set(config, tiers);
  }
  return { organisation: organisationId, tiers, graceS: config.gracePeriodDays * 86_400 };
}

/** The license and every usage count against the limits in force: one row of the status read. */
export interface LicenseStatusRow {
  tier: string;
  isActive: boolean;
  isExpired: boolean;
  /** False when TIERS_FILE no longer lists the license's tier (free limits then apply). */
  tierKnown: boolean;
  projectsUsed: number;
  projectsLimit: number;
  aiTokensUsed: number;
  aiTokensLimit: number;
  usersUsed: number;
  usersLimit: number;
}

/** The status read for a session token not yet verified: also whether it is live, and a member's. */
export interface SessionStatusRow extends LicenseStatusRow {
  authenticated: boolean;
  member: boolean;
}

/**
 * Each row as one JSON value (column `status`): pg then decodes one field instead of a dozen, which measured
 * ~30 µs less server CPU per status read. Numbers arrive as JSON numbers, booleans as booleans, and the
 * keys are the camelCase aliases below.
 */
const asOneJsonColumn = (select: string) => `SELECT row_to_json(r) AS status FROM (${select}) r`;

// The license state and every usage count, selected from `state` (licenseStateSql) as `s`.
const statusColumns = (organisation: string) => `
  s.tier, s.is_active AS "isActive", s.is_expired AS "isExpired", s.tier_known AS "tierKnown",
  (s.limits ->> 'projects')::bigint AS "projectsLimit",
  (s.limits ->> 'ai_tokens')::bigint AS "aiTokensLimit",
  (s.limits ->> 'users')::bigint AS "usersLimit",
  COALESCE((SELECT used FROM usage_counters
            WHERE organisation_id = ${organisation} AND metric = 'projects' AND period_start = 0), 0) AS "projectsUsed",
  COALESCE((SELECT used FROM usage_counters
            WHERE organisation_id = ${organisation} AND metric = 'ai_tokens' AND period_start = s.ai_period), 0) AS "aiTokensUsed",
  ${accessSql.memberCount(organisation)} AS "usersUsed"`;

/**
 * One round trip: the caller's access, the license state and every usage count. `user` is the calling
 * user, or NULL for a trusted back-end (service key), for which the organisation only has to exist.
 */
const STATUS = namedParams('organisation', 'tiers', 'graceS', 'user');
const STATUS_SQL = asOneJsonColumn(`
  WITH ${licenseStateSql(STATUS.ref)}
  SELECT ${statusColumns(STATUS.ref.organisation)}
  FROM state s
  WHERE CASE WHEN ${STATUS.ref.user}::uuid IS NULL THEN ${accessSql.organisationExists(STATUS.ref.organisation)}
             ELSE ${accessSql.isMember(STATUS.ref.organisation, `${STATUS.ref.user}::uuid`)} END`);

/**
 * The same read for a session token not yet verified (`tokenHash`, its SHA-256): the session check, the
 * membership check, the license state and every usage count in one round trip. Always one row.
 */
const SESSION_STATUS = namedParams('organisation', 'tiers', 'graceS', 'tokenHash');
const SESSION_STATUS_SQL = asOneJsonColumn(`
  WITH ${licenseStateSql(SESSION_STATUS.ref)},
  caller AS (${accessSql.liveSessionUser(`${SESSION_STATUS.ref.tokenHash}::bytea`)})
  SELECT ${statusColumns(SESSION_STATUS.ref.organisation)},
         EXISTS (SELECT 1 FROM caller) AS authenticated,
         ${accessSql.isMember(SESSION_STATUS.ref.organisation, '(SELECT user_id FROM caller)')} AS member
  FROM state s`);

/** The status read, the hottest statement of the service: hand-written, prepared, one round trip. */
@Injectable()
export class LicensingRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /**
   * `userId` null: a service-key caller, for whom the organisation only has to exist; else the user must
   * be a member. Undefined when not.
   */
  async status(organisationId: string, userId: string | null, m: EntityManager = this.db.manager): Promise<LicenseStatusRow | undefined> {
    const values = STATUS.values({ ...licenseStateValues(this.config, organisationId), user: userId });
    const [row] = await preparedQuery<{ status: LicenseStatusRow }>(m, STATUS_SQL, values);
    return row?.status;
  }

  /** The status read for a session token (its SHA-256) verified by the statement itself. */
  async sessionStatus(organisationId: string, tokenHash: Buffer): Promise<SessionStatusRow> {
    const values = SESSION_STATUS.values({ ...licenseStateValues(this.config, organisationId), tokenHash });
    const [row] = await preparedQuery<{ status: SessionStatusRow }>(this.db, SESSION_STATUS_SQL, values);
    return row.status;
  }
}
