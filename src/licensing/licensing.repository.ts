import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Overage } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { licenseConstants } from './license-state';

/*
 * Licensing's reads: the status and entitlements reads, each one statement (one round trip) that calls the
 * license (licensing.license_state, see license-state.ts), identity's access check (identity.access) and the
 * counts, by name.
 */

/** The tier table and the grace period as SQL constants (licenseConstants): each statement is written once per process. */
type Constants = ReturnType<typeof licenseConstants>;

/** The license of `organisation`, as `s`. */
const license = (organisation: string, c: Constants) => `licensing.license_state(${organisation}::uuid, ${c.tiers}, ${c.graceS}) s`;

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

// The license and every usage count, selected from the license `s` of `organisation` with the tier table `tiers`.
const statusColumns = (organisation: string, { tiers }: Constants) => `
  s.tier, s.is_active AS "isActive", s.is_expired AS "isExpired", s.tier_known AS "tierKnown",
  (s.limits ->> 'projects')::bigint AS "projectsLimit",
  (s.limits ->> 'ai_tokens')::bigint AS "aiTokensLimit",
  (s.limits ->> 'users')::bigint AS "usersLimit",
  COALESCE((SELECT used FROM usage_counters WHERE organisation_id = ${organisation}::uuid AND metric = 'projects'
              AND period_start = licensing.counter_period(${tiers}, 'projects', s.ai_period)), 0) AS "projectsUsed",
  COALESCE((SELECT used FROM usage_counters WHERE organisation_id = ${organisation}::uuid AND metric = 'ai_tokens'
              AND period_start = licensing.counter_period(${tiers}, 'ai_tokens', s.ai_period)), 0) AS "aiTokensUsed",
  (SELECT count(*) FROM identity.members(${organisation}::uuid)) AS "usersUsed"`;

/**
 * One round trip: the caller's access, the license and every usage count. `user` is the calling user, or
 * NULL for a trusted back-end (service key), for which the organisation only has to exist.
 */
const STATUS = namedParams('organisation', 'user');
const statusSql = (c: Constants) =>
  asOneJsonColumn(`
  SELECT ${statusColumns(STATUS.ref.organisation, c)}
  FROM ${license(STATUS.ref.organisation, c)}
  CROSS JOIN identity.access(${STATUS.ref.organisation}::uuid, ${STATUS.ref.user}::uuid, NULL) a
  WHERE a.allowed`);

/**
 * The same read for a session token not yet verified (`tokenHash`, its SHA-256): the session check, the
 * membership check, the license and every usage count in one round trip. Always one row.
 */
const SESSION_STATUS = namedParams('organisation', 'tokenHash');
const sessionStatusSql = (c: Constants) =>
  asOneJsonColumn(`
  SELECT ${statusColumns(SESSION_STATUS.ref.organisation, c)}, a.authenticated, a.allowed AS member
  FROM ${license(SESSION_STATUS.ref.organisation, c)}
  CROSS JOIN identity.access(${SESSION_STATUS.ref.organisation}::uuid, NULL, ${SESSION_STATUS.ref.tokenHash}::bytea) a`);

/**
 * The entitlements read (spec §12, §16.2): the license state, every count, the version, the live overrides, and
 * each credits metric's balance and holds (credits.counting_grants, credits.live_holds).
 */
export interface EntitlementsRow {
  tier: string;
  isActive: boolean;
  isExpired: boolean;
  tierKnown: boolean;
  version: number;
  seats: number | null;
  /** The plan version the license comes from (spec §17). */
  planVersion: number | null;
  /** Metric → the limit in force; features → in force; metric → `override` for limits not the tier's. */
  limits: Record<string, number>;
  features: Record<string, boolean>;
  overage: Record<string, Overage>;
  sources: Record<string, 'seats' | 'override'>;
  /** Metric → its count in the current period (`users`: the memberships; a metric never reported: absent). */
  used: Record<string, number>;
  /** A credits metric (spec §16.2) → the balance of its grants that count and what live reservations hold. */
  credits: Record<string, { balance: number; reserved: number }>;
  overrides: { name: string; value: boolean | number; expires_at: string | null; note: string | null; created_at: string }[];
  /** The caller: a session token that matched a live session (true when the caller is not a session token). */
  authenticated: boolean;
  /** The caller may read the organisation: a member (a user), or it exists (a service key). */
  allowed: boolean;
  /** The caller's role there; null for a service key (or a caller who is not a member). */
  role: string | null;
}

/**
 * The entitlements read in one round trip, for every kind of caller: a session token not yet verified
 * (`tokenHash`, its SHA-256: verified here, like the status read's), a verified user (`user`, a JWT's), or a
 * service key (both NULL: the organisation only has to exist). Always one row.
 */
const ENTITLEMENTS = namedParams('organisation', 'user', 'tokenHash');
const { organisation: $eOrg, user: $eUser, tokenHash: $eToken } = ENTITLEMENTS.ref;
const entitlementsSql = (c: Constants) =>
  asOneJsonColumn(`
  SELECT s.tier, s.is_active AS "isActive", s.is_expired AS "isExpired", s.tier_known AS "tierKnown",
         s.limits, s.features, s.overage, s.sources, s.seats, s.plan_version AS "planVersion",
         (SELECT version FROM notifications.version(${$eOrg}::uuid)) AS version,
         COALESCE((SELECT jsonb_object_agg(u.metric, u.used) FROM licensing.period_usage(${$eOrg}::uuid, ${c.tiers}, s.ai_period) u), '{}')
           || jsonb_build_object('users', (SELECT count(*) FROM identity.members(${$eOrg}::uuid))) AS used,
         COALESCE((SELECT jsonb_object_agg(o.key, jsonb_build_object(
                            'balance', (SELECT COALESCE(sum(g.remaining), 0) FROM credits.counting_grants(${$eOrg}::uuid) g WHERE g.metric = o.key),
                            'reserved', (SELECT COALESCE(sum(h.amount), 0) FROM credits.live_holds(${$eOrg}::uuid, o.key) h)))
                   FROM jsonb_each_text(s.overage) o WHERE o.value = 'credits'), '{}') AS credits,
         COALESCE((SELECT json_agg(json_build_object('name', o.name, 'value', o.value, 'expires_at', o.expires_at,
                                                     'note', o.note, 'created_at', o.created_at) ORDER BY o.name)
                   FROM licensing.live_overrides(${$eOrg}::uuid) o), '[]') AS overrides,
         a.authenticated, a.allowed, a.role
  FROM ${license($eOrg, c)}
  CROSS JOIN identity.access(${$eOrg}::uuid, ${$eUser}::uuid, ${$eToken}::bytea) a`);

/** The status read, the hottest statement of the service: hand-written, prepared, one round trip. */
@Injectable()
export class LicensingRepository {
  private readonly sql: { status: string; sessionStatus: string; entitlements: string };

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    config: AppConfig,
  ) {
    const constants = licenseConstants(config);
    this.sql = { status: statusSql(constants), sessionStatus: sessionStatusSql(constants), entitlements: entitlementsSql(constants) };
  }

  /**
   * `userId` null: a service-key caller, for whom the organisation only has to exist; else the user must
   * be a member. Undefined when not.
   */
  async status(m: EntityManager, organisationId: string, userId: string | null): Promise<LicenseStatusRow | undefined> {
    const values = STATUS.values({ organisation: organisationId, user: userId });
    const [row] = await preparedQuery<{ status: LicenseStatusRow }>(m, this.sql.status, values);
    return row?.status;
  }

  /** The entitlements read; `caller` as entitlementsSql says (a service key: neither). */
  async entitlements(organisationId: string, caller: { userId?: string; sessionTokenHash?: Buffer }): Promise<EntitlementsRow> {
    const values = ENTITLEMENTS.values({ organisation: organisationId, user: caller.userId ?? null, tokenHash: caller.sessionTokenHash ?? null });
    const [row] = await preparedQuery<{ status: EntitlementsRow }>(this.db, this.sql.entitlements, values);
    return row.status;
  }

  /** The status read for a session token (its SHA-256) verified by the statement itself. */
  async sessionStatus(organisationId: string, tokenHash: Buffer): Promise<SessionStatusRow> {
    const values = SESSION_STATUS.values({ organisation: organisationId, tokenHash });
    const [row] = await preparedQuery<{ status: SessionStatusRow }>(this.db, this.sql.sessionStatus, values);
    return row.status;
  }
}
