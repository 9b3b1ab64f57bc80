import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { namedParams, preparedQuery } from '../database/prepared';
import type { MigrationPreview } from './plans.dto';

/** A version with its live subscriptions. */
export interface VersionRow {
  tier: string;
  version: number;
  definition: Record<string, unknown>;
  created_at: Date;
  subscriptions: number;
}

// Every version with the live subscriptions on it (subscriptions.live_on_versions), one pass.
const VERSIONS_SQL = `
  SELECT v.tier, v.version, v.definition, v.created_at, COALESCE(c.n, 0)::int AS subscriptions
  FROM subscriptions.plan_versions() v
  LEFT JOIN (SELECT l.tier, l.plan_version, count(*) AS n FROM subscriptions.live_on_versions($1::bigint) l GROUP BY 1, 2) c
    ON c.tier = v.tier AND c.plan_version = v.version
  ORDER BY v.tier, v.version`;

const PREVIEW = namedParams('tiers', 'graceS', 'tier', 'fromVersion', 'toVersion', 'limit', 'startingAfter');
const { tiers: $tiers, graceS: $grace, tier: $tier, fromVersion: $from, toVersion: $to, limit: $limit, startingAfter: $after } = PREVIEW.ref;

/*
 * The migration preview (spec §17), set-based in one statement that changes nothing. The live subscriptions of the
 * tier on an older version (or on from_version) are `s`. What differs between each of their versions and the
 * target is computed once per version, as the license reads a version (licensing.tier_plan_at): the features (`fd`)
 * and the limits (`ld`; a per-seat tier's users limit is the seats, at most its max, so it is compared per
 * subscription). Each subscription then takes its version's differences, less those an override in force decides
 * either way (an override is the value before and after), with the use now of each metric whose limit changes
 * (the subscription's period for a metric counted per period; users: the memberships). The summary counts them
 * all; the rows are one page of organisations.
 */
const PREVIEW_SQL = `
  WITH v AS (
    SELECT pv.version, pv.definition -> 'prices' AS prices, p.per_seat, p.limits, p.features
    FROM subscriptions.plan_versions() pv
    CROSS JOIN LATERAL licensing.tier_plan_at(${$tiers}::jsonb, pv.tier, pv.definition) p
    WHERE pv.tier = ${$tier}::text
  ),
  t AS (SELECT * FROM v WHERE v.version = ${$to}::int),
  s AS MATERIALIZED (
    SELECT l.organisation_id, l.subscription_id, l.plan_version, l.period_start, l.seats
    FROM subscriptions.live_on_versions(${$grace}::bigint) l
    WHERE l.tier = ${$tier}::text AND l.plan_version < ${$to}::int AND (${$from}::int IS NULL OR l.plan_version = ${$from}::int)
  ),
  fd AS (
    SELECT f.version, k.feature, t.features -> k.feature = 'true' AS gained
    FROM v f CROSS JOIN t CROSS JOIN LATERAL jsonb_object_keys(t.features) k(feature)
    WHERE f.version < t.version AND (f.features -> k.feature) IS DISTINCT FROM (t.features -> k.feature)
  ),
  ld AS (
    SELECT f.version, k.metric, k.ord, (f.limits ->> k.metric)::bigint AS from_limit, (t.limits ->> k.metric)::bigint AS to_limit,
           k.metric = 'users' AND f.per_seat AS from_seats, k.metric = 'users' AND t.per_seat AS to_seats
    FROM v f CROSS JOIN t CROSS JOIN LATERAL jsonb_object_keys(t.limits) WITH ORDINALITY k(metric, ord)
    WHERE f.version < t.version
      AND ((f.limits -> k.metric) IS DISTINCT FROM (t.limits -> k.metric) OR (k.metric = 'users' AND (f.per_seat OR t.per_seat)))
  ),
  ov AS MATERIALIZED (
    SELECT s.organisation_id, o.name, o.value FROM s CROSS JOIN LATERAL licensing.live_overrides(s.organisation_id) o
    WHERE o.name IN (SELECT fd.feature FROM fd UNION SELECT ld.metric FROM ld)
  ),
  sf AS MATERIALIZED (
    SELECT s.organisation_id, s.subscription_id, fd.feature, fd.gained
    FROM s JOIN fd ON fd.version = s.plan_version
    WHERE NOT EXISTS (SELECT 1 FROM ov WHERE ov.organisation_id = s.organisation_id AND ov.name = fd.feature)
  ),
  sl AS MATERIALIZED (
    SELECT x.organisation_id, x.subscription_id, x.metric, x.ord, x.lfrom, x.lto,
           CASE WHEN x.metric = 'users' THEN (SELECT count(*) FROM identity.members(x.organisation_id)) ELSE COALESCE(c.used, 0) END AS used
    FROM (
      SELECT s.organisation_id, s.subscription_id, s.period_start, ld.metric, ld.ord,
             CASE WHEN ld.from_seats AND s.seats IS NOT NULL THEN LEAST(s.seats, ld.from_limit) ELSE ld.from_limit END AS lfrom,
             CASE WHEN ld.to_seats AND s.seats IS NOT NULL THEN LEAST(s.seats, ld.to_limit) ELSE ld.to_limit END AS lto
      FROM s JOIN ld ON ld.version = s.plan_version
      WHERE NOT EXISTS (SELECT 1 FROM ov WHERE ov.organisation_id = s.organisation_id AND ov.name = ld.metric)
    ) x
    LEFT JOIN usage_counters c ON c.organisation_id = x.organisation_id AND c.metric = x.metric
                               AND c.period_start = licensing.counter_period(${$tiers}::jsonb, x.metric, x.period_start)
    WHERE x.lfrom IS DISTINCT FROM x.lto
  ),
  page AS (
    SELECT DISTINCT s.organisation_id FROM s WHERE ${$after}::uuid IS NULL OR s.organisation_id > ${$after}::uuid
    ORDER BY s.organisation_id LIMIT ${$limit}::int + 1
  ),
  shown AS (SELECT p.organisation_id FROM page p ORDER BY p.organisation_id LIMIT ${$limit}::int),
  shown_features AS (
    SELECT sf.subscription_id, array_agg(sf.feature ORDER BY sf.feature) FILTER (WHERE sf.gained) AS gained,
           array_agg(sf.feature ORDER BY sf.feature) FILTER (WHERE NOT sf.gained) AS lost
    FROM sf JOIN shown p ON p.organisation_id = sf.organisation_id GROUP BY 1
  ),
  shown_limits AS (
    SELECT sl.subscription_id,
           json_agg(json_build_object('metric', sl.metric, 'from', sl.lfrom, 'to', sl.lto, 'used', sl.used, 'over', sl.used > sl.lto) ORDER BY sl.ord) AS limits
    FROM sl JOIN shown p ON p.organisation_id = sl.organisation_id GROUP BY 1
  )
  SELECT json_build_object(
    'subscriptions', (SELECT count(*) FROM s),
    'summary', json_build_object(
      'features_gained', (SELECT COALESCE(json_object_agg(x.feature, x.n), '{}')
                          FROM (SELECT sf.feature, count(*) AS n FROM sf WHERE sf.gained GROUP BY 1) x),
      'features_lost', (SELECT COALESCE(json_object_agg(x.feature, x.n), '{}')
                        FROM (SELECT sf.feature, count(*) AS n FROM sf WHERE NOT sf.gained GROUP BY 1) x),
      'limits_lowered', (SELECT COALESCE(json_object_agg(x.metric, x.n), '{}')
                         FROM (SELECT sl.metric, count(*) AS n FROM sl WHERE sl.lto < sl.lfrom GROUP BY 1) x),
      'over_new_limit', (SELECT COALESCE(json_object_agg(x.metric, x.n), '{}')
                         FROM (SELECT sl.metric, count(*) AS n FROM sl WHERE sl.used > sl.lto GROUP BY 1) x),
      'price_changed', (SELECT count(*) FROM s JOIN v f ON f.version = s.plan_version CROSS JOIN t WHERE f.prices IS DISTINCT FROM t.prices)),
    'data', COALESCE((
      SELECT json_agg(json_build_object(
               'organisation_id', s.organisation_id, 'external_id', io.external_id, 'subscription_id', s.subscription_id,
               'from_version', s.plan_version,
               'features_gained', COALESCE(sfs.gained, '{}'), 'features_lost', COALESCE(sfs.lost, '{}'),
               'limits', COALESCE(sls.limits, '[]'),
               'price', CASE WHEN f.prices IS DISTINCT FROM t.prices THEN json_build_object('from', f.prices, 'to', t.prices) END)
             ORDER BY s.organisation_id, s.subscription_id)
      FROM shown p
      JOIN s ON s.organisation_id = p.organisation_id
      JOIN v f ON f.version = s.plan_version
      CROSS JOIN t
      LEFT JOIN shown_features sfs ON sfs.subscription_id = s.subscription_id
      LEFT JOIN shown_limits sls ON sls.subscription_id = s.subscription_id
      LEFT JOIN LATERAL identity.organisation(s.organisation_id) io ON true), '[]'),
    'has_more', (SELECT count(*) FROM page) > ${$limit}::int
  ) AS preview`;

/** The plans' admin reads: every version with its live subscriptions, and the migration preview. */
@Injectable()
export class PlansRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  versions(graceS: number): Promise<VersionRow[]> {
    return preparedQuery<VersionRow>(this.db, VERSIONS_SQL, [graceS]);
  }

  async preview(p: { tiers: string; graceS: number; tier: string; fromVersion: number | null; toVersion: number; limit: number; startingAfter: string | null }): Promise<MigrationPreview> {
    const [row] = await preparedQuery<{ preview: MigrationPreview }>(this.db, PREVIEW_SQL, PREVIEW.values(p));
    return row.preview;
  }
}
