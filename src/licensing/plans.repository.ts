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
 * The migration preview (spec §17), set-based in one statement: each live subscription of the tier on an older
 * version (or on from_version), its version's plan and the target's as the license reads them
 * (licensing.tier_plan_at), each with the organisation's live overrides laid over (an override keeping a feature
 * or a limit keeps it either way), and the metrics whose limit in force would change, with the use now (the
 * subscription's period for a metric counted per period; users: the memberships). Then the summary over all of
 * them and one page of organisations. Changes nothing.
 */
const PREVIEW_SQL = `
  WITH v AS (
    SELECT pv.version, pv.definition -> 'prices' AS prices, p.per_seat, p.limits, p.features
    FROM subscriptions.plan_versions() pv
    CROSS JOIN LATERAL licensing.tier_plan_at(${$tiers}::jsonb, pv.tier, pv.definition) p
    WHERE pv.tier = ${$tier}::text
  ),
  t AS (SELECT * FROM v WHERE v.version = ${$to}::int),
  d AS MATERIALIZED (
    SELECT l.organisation_id, l.subscription_id, l.plan_version,
           ARRAY(SELECT e.key FROM jsonb_each(t.features || o.features) e
                 WHERE e.value = 'true' AND (f.features || o.features) -> e.key IS DISTINCT FROM 'true' ORDER BY e.key) AS gained,
           ARRAY(SELECT e.key FROM jsonb_each(f.features || o.features) e
                 WHERE e.value = 'true' AND (t.features || o.features) -> e.key IS DISTINCT FROM 'true' ORDER BY e.key) AS lost,
           m.limits, f.prices IS DISTINCT FROM t.prices AS price_changed, f.prices AS from_prices, t.prices AS to_prices
    FROM subscriptions.live_on_versions(${$grace}::bigint) l
    JOIN v f ON f.version = l.plan_version
    CROSS JOIN t
    CROSS JOIN LATERAL (
      SELECT COALESCE(jsonb_object_agg(x.name, x.value) FILTER (WHERE jsonb_typeof(x.value) = 'number'), '{}') AS limits,
             COALESCE(jsonb_object_agg(x.name, x.value) FILTER (WHERE jsonb_typeof(x.value) = 'boolean'), '{}') AS features
      FROM licensing.live_overrides(l.organisation_id) x
    ) o
    CROSS JOIN LATERAL (
      SELECT COALESCE(jsonb_agg(jsonb_build_object('metric', c.metric, 'from', c.lfrom, 'to', c.lto, 'used', c.used, 'over', c.used > c.lto)
                                ORDER BY c.ord), '[]') AS limits
      FROM (
        SELECT k.metric, k.ord, k.lfrom, k.lto,
               CASE WHEN k.metric = 'users' THEN (SELECT count(*) FROM identity.members(l.organisation_id))
                    ELSE COALESCE((SELECT u.used FROM licensing.period_usage(l.organisation_id, ${$tiers}::jsonb, l.period_start) u
                                   WHERE u.metric = k.metric), 0) END AS used
        FROM (
          SELECT n.metric, n.ord,
                 COALESCE((o.limits ->> n.metric)::bigint,
                          CASE WHEN n.metric = 'users' AND f.per_seat AND l.seats IS NOT NULL THEN LEAST(l.seats, (f.limits ->> 'users')::bigint)
                               ELSE (f.limits ->> n.metric)::bigint END) AS lfrom,
                 COALESCE((o.limits ->> n.metric)::bigint,
                          CASE WHEN n.metric = 'users' AND t.per_seat AND l.seats IS NOT NULL THEN LEAST(l.seats, (t.limits ->> 'users')::bigint)
                               ELSE (t.limits ->> n.metric)::bigint END) AS lto
          FROM jsonb_object_keys(${$tiers}::jsonb -> 'free' -> 'limits') WITH ORDINALITY n(metric, ord)
        ) k
        WHERE k.lfrom IS DISTINCT FROM k.lto
      ) c
    ) m
    WHERE l.tier = ${$tier}::text AND l.plan_version < ${$to}::int AND (${$from}::int IS NULL OR l.plan_version = ${$from}::int)
  ),
  page AS (
    SELECT DISTINCT d.organisation_id FROM d WHERE ${$after}::uuid IS NULL OR d.organisation_id > ${$after}::uuid
    ORDER BY d.organisation_id LIMIT ${$limit}::int + 1
  ),
  limited AS (SELECT d.*, l.value AS l FROM d CROSS JOIN LATERAL jsonb_array_elements(d.limits) l)
  SELECT json_build_object(
    'subscriptions', (SELECT count(*) FROM d),
    'summary', json_build_object(
      'features_gained', (SELECT COALESCE(json_object_agg(x.g, x.n), '{}') FROM (SELECT g, count(*) AS n FROM d, unnest(d.gained) g GROUP BY g) x),
      'features_lost', (SELECT COALESCE(json_object_agg(x.g, x.n), '{}') FROM (SELECT g, count(*) AS n FROM d, unnest(d.lost) g GROUP BY g) x),
      'limits_lowered', (SELECT COALESCE(json_object_agg(x.metric, x.n), '{}')
                         FROM (SELECT l ->> 'metric' AS metric, count(*) AS n FROM limited WHERE (l ->> 'to')::bigint < (l ->> 'from')::bigint GROUP BY 1) x),
      'over_new_limit', (SELECT COALESCE(json_object_agg(x.metric, x.n), '{}')
                         FROM (SELECT l ->> 'metric' AS metric, count(*) AS n FROM limited WHERE (l ->> 'over')::boolean GROUP BY 1) x),
      'price_changed', (SELECT count(*) FROM d WHERE d.price_changed)),
    'data', COALESCE((
      SELECT json_agg(json_build_object('organisation_id', d.organisation_id, 'external_id', io.external_id, 'subscription_id', d.subscription_id,
                                        'from_version', d.plan_version, 'features_gained', d.gained, 'features_lost', d.lost, 'limits', d.limits,
                                        'price', CASE WHEN d.price_changed THEN json_build_object('from', d.from_prices, 'to', d.to_prices) END)
                      ORDER BY d.organisation_id, d.subscription_id)
      FROM d
      JOIN (SELECT p.organisation_id FROM page p ORDER BY p.organisation_id LIMIT ${$limit}::int) p ON p.organisation_id = d.organisation_id
      LEFT JOIN LATERAL identity.organisation(d.organisation_id) io ON true), '[]'),
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
