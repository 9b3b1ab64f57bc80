import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, limitsOf, Overage, overagesOf } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { accessSql } from '../identity/access.sql';
import { notificationStateSql } from '../notifications/notification-state.sql';
import { liveOverridesSql } from './overrides.sql';
import { licenseChoiceSql } from './license-choice.sql';

/*
 * Licensing's reads: the license state (derived from billing's subscriptions) and the status read built on
 * it. The license state is also a fragment of the usage write (usage.repository.ts) and of notifications'
 * license comparison, so that each decides inside its own statement.
 */

/** Where a statement embedding `licenseStateSql` keeps the values of `licenseStateValues` (see namedParams). */
export interface LicenseStateParams {
  organisation: string;
  /**
   * The tier table (jsonb, tier → `{rank, per_seat, limits, overage, features}`: its place in the table,
   * whether it is sold per seat, its integer limits by metric (a per-seat tier's `users` is its `max`), what a
   * report past each limit does, its features).
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
 * The license follows the organisation's best subscription (spec §5; the rule is licenseChoiceSql's): the
 * highest tier (tier-table order) among those live now (active, trialing, or past_due within
 * GRACE_PERIOD_DAYS of when it became past_due); when none is live, the one whose last event is newest,
 * which then shows as not active and, when its paid period ended without renewal, expired. No subscription:
 * free, active, not expired. `license.subscription_id` is the one chosen (null: none).
 *
 * While a paid license is not active, its limits and features are the free tier's. The organisation's live
 * overrides (spec §12, entitlement_overrides: not expired at now()) replace the tier's value whatever the
 * tier and license state.
 *
 * `state` has one row (also for an organisation without subscriptions, or one that does not exist):
 *   tier, is_active, is_expired, tier_known, limits (jsonb of the limits in force), features (jsonb of
 *   the features in force), overage (jsonb: metric → `block` or `bill`, of the tier in force), sources (jsonb: metric → `seats` or `override`, for limits not the tier's),
 *   seats (the subscription's seat count when its tier is sold per seat, else null), ai_period (start of
 *   the ai_tokens billing period, Unix seconds). `overrides` has the live overrides, one row each.
 *
 * A per-seat tier's `users` limit in force is the subscription's seats, at most the tier's `max` (spec §11.5);
 * an override wins over seats.
 */
export const licenseStateSql = ({ organisation: $org, tiers: $tiers, graceS: $grace }: LicenseStateParams) => `
  license AS (
    SELECT COALESCE(b.tier, '${FREE_TIER}') AS tier, b.subscription_id, b.status, b.period_start, b.period_end, b.past_due_since,
           b.in_grace, b.seats, n.now_s
    FROM (SELECT extract(epoch FROM now())::bigint AS now_s) AS n
    LEFT JOIN LATERAL (
      SELECT * FROM (${licenseChoiceSql.ranked({ organisation: $org, tiers: $tiers, graceS: $grace, nowS: 'n.now_s' })}) AS r
      ORDER BY ${licenseChoiceSql.order}
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
  overrides AS (${liveOverridesSql(`${$org}::uuid`)}),
  state AS (
    SELECT f.tier, f.is_active, f.is_expired, f.tier_known,
           (f.plan -> 'limits') || f.seat_limit || o.limits AS limits,
           (f.plan -> 'features') || o.features AS features,
           f.plan -> 'overage' AS overage,
           CASE WHEN f.seat_limit <> '{}' THEN '{"users": "seats"}'::jsonb ELSE '{}' END || o.sources AS sources,
           CASE WHEN f.per_seat THEN f.seats END AS seats,
           CASE WHEN f.tier <> '${FREE_TIER}' AND f.is_active AND f.period_start IS NOT NULL THEN f.period_start
                ELSE extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::bigint
           END AS ai_period
    FROM (SELECT flags.*,
                 CASE WHEN is_active AND tier_known THEN ${$tiers}::jsonb -> tier ELSE ${$tiers}::jsonb -> '${FREE_TIER}' END AS plan,
                 CASE WHEN is_active AND per_seat AND seats IS NOT NULL
                      THEN jsonb_build_object('users', LEAST(seats, (${$tiers}::jsonb -> tier -> 'limits' ->> 'users')::bigint))
                      ELSE '{}' END AS seat_limit
          FROM flags) AS f
    CROSS JOIN (
      SELECT COALESCE(jsonb_object_agg(name, value) FILTER (WHERE jsonb_typeof(value) = 'number'), '{}') AS limits,
             COALESCE(jsonb_object_agg(name, value) FILTER (WHERE jsonb_typeof(value) = 'boolean'), '{}') AS features,
             COALESCE(jsonb_object_agg(name, 'override') FILTER (WHERE jsonb_typeof(value) = 'number'), '{}') AS sources
      FROM overrides) AS o
  )`;

/**
 * The usage counter period a metric counts in (SQL): ai_tokens per billing period (`aiPeriod`, licenseStateSql's
 * ai_period), any other metric as a gauge (period 0). The usage write keys its counters by it, and the meters'
 * summary and pruning read it.
 */
export const counterPeriodSql = (metric: string, aiPeriod: string) => `CASE WHEN ${metric} = 'ai_tokens' THEN ${aiPeriod} ELSE 0 END`;

// The tier table as the jsonb parameter, serialised once per configuration rather than per request.
const tiersJson = new WeakMap<AppConfig, string>();

/** The values for the parameters named in LicenseStateParams. */
export function licenseStateValues(config: AppConfig, organisationId: string): Record<keyof LicenseStateParams, unknown> {
  let tiers = tiersJson.get(config);
  if (tiers === undefined) {
    tiers = JSON.stringify(
      Object.fromEntries(
        Object.entries(config.tiers).map(([tier, plan], rank) => [
          tier,
          { rank, per_seat: plan.perSeat, limits: limitsOf(plan), overage: overagesOf(plan), features: plan.features },
        ]),
      ),
    );
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

/** Whether `user` (NULL: a trusted back-end, for which the organisation only has to exist) may read the organisation. */
export const readableBy = (organisation: string, user: string) =>
  `CASE WHEN ${user}::uuid IS NULL THEN ${accessSql.organisationExists(organisation)}
        ELSE ${accessSql.isMember(organisation, `${user}::uuid`)} END`;

/**
 * One round trip: the caller's access, the license state and every usage count. `user` is the calling
 * user, or NULL for a trusted back-end (service key), for which the organisation only has to exist.
 */
const STATUS = namedParams('organisation', 'tiers', 'graceS', 'user');
const STATUS_SQL = asOneJsonColumn(`
  WITH ${licenseStateSql(STATUS.ref)}
  SELECT ${statusColumns(STATUS.ref.organisation)}
  FROM state s
  WHERE ${readableBy(STATUS.ref.organisation, STATUS.ref.user)}`);

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

/** The entitlements read (spec §12): the license state, every count, the version and the live overrides. */
export interface EntitlementsRow {
  tier: string;
  isActive: boolean;
  isExpired: boolean;
  tierKnown: boolean;
  version: number;
  seats: number | null;
  /** Metric → the limit in force; features → in force; metric → `override` for limits not the tier's. */
  limits: Record<string, number>;
  features: Record<string, boolean>;
  overage: Record<string, Overage>;
  sources: Record<string, 'seats' | 'override'>;
  /** Metric → its count in the current period (`users`: the memberships; a metric never reported: absent). */
  used: Record<string, number>;
  overrides: { name: string; value: boolean | number; expires_at: string | null; note: string | null; created_at: string }[];
  /** The caller: a session token that matched a live session (true when the caller is not a session token). */
  authenticated: boolean;
  /** The caller may read the organisation: a member (a user), or it exists (a service key). */
  allowed: boolean;
}

/**
 * The entitlements read in one round trip, for every kind of caller: a session token not yet verified
 * (`tokenHash`, its SHA-256: verified here, like the status read's), a verified user (`user`, a JWT's), or a
 * service key (both NULL: the organisation only has to exist). Always one row.
 */
const ENTITLEMENTS = namedParams('organisation', 'tiers', 'graceS', 'user', 'tokenHash');
const { organisation: $eOrg, user: $eUser, tokenHash: $eToken } = ENTITLEMENTS.ref;
const ENTITLEMENTS_SQL = asOneJsonColumn(`
  WITH ${licenseStateSql(ENTITLEMENTS.ref)},
  caller AS (${accessSql.liveSessionUser(`${$eToken}::bytea`)})
  SELECT s.tier, s.is_active AS "isActive", s.is_expired AS "isExpired", s.tier_known AS "tierKnown",
         s.limits, s.features, s.overage, s.sources, s.seats,
         ${notificationStateSql.version(`${$eOrg}::uuid`)} AS version,
         COALESCE((SELECT jsonb_object_agg(c.metric, c.used) FROM usage_counters c
                   WHERE c.organisation_id = ${$eOrg}::uuid
                     AND c.period_start = ${counterPeriodSql('c.metric', 's.ai_period')}), '{}')
           || jsonb_build_object('users', ${accessSql.memberCount(`${$eOrg}::uuid`)}) AS used,
         COALESCE((SELECT json_agg(json_build_object('name', o.name, 'value', o.value, 'expires_at', o.expires_at,
                                                     'note', o.note, 'created_at', o.created_at) ORDER BY o.name)
                   FROM overrides o), '[]') AS overrides,
         ${$eToken}::bytea IS NULL OR EXISTS (SELECT 1 FROM caller) AS authenticated,
         CASE WHEN ${$eToken}::bytea IS NOT NULL THEN ${accessSql.isMember(`${$eOrg}::uuid`, '(SELECT user_id FROM caller)')}
              WHEN ${$eUser}::uuid IS NOT NULL THEN ${accessSql.isMember(`${$eOrg}::uuid`, `${$eUser}::uuid`)}
              ELSE ${accessSql.organisationExists(`${$eOrg}::uuid`)} END AS allowed
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

  /** The entitlements read; `caller` as ENTITLEMENTS_SQL says (a service key: neither). */
  async entitlements(organisationId: string, caller: { userId?: string; sessionTokenHash?: Buffer }): Promise<EntitlementsRow> {
    const values = ENTITLEMENTS.values({
      ...licenseStateValues(this.config, organisationId),
      user: caller.userId ?? null,
      tokenHash: caller.sessionTokenHash ?? null,
    });
    const [row] = await preparedQuery<{ status: EntitlementsRow }>(this.db, ENTITLEMENTS_SQL, values);
    return row.status;
  }

  /** The status read for a session token (its SHA-256) verified by the statement itself. */
  async sessionStatus(organisationId: string, tokenHash: Buffer): Promise<SessionStatusRow> {
    const values = SESSION_STATUS.values({ ...licenseStateValues(this.config, organisationId), tokenHash });
    const [row] = await preparedQuery<{ status: SessionStatusRow }>(this.db, SESSION_STATUS_SQL, values);
    return row.status;
  }
}
