import { AppConfig } from '../config/app-config';
import { subscriptionSql } from '../billing/subscription.sql';
import { FREE_TIER } from '../config/tiers';

/** Where a statement embedding `licenseStateSql` keeps the values of `licenseStateValues` (see namedParams). */
export interface LicenseStateParams {
  organisation: string;
  /** The tier table (jsonb, tier → limits and `rank`, its place in the table). */
  tiers: string;
  /** The grace period in seconds. */
  graceS: string;
}

/**
 * The license state of an organisation, as SQL common table expressions, so that the status read and the
 * usage write compute the tier, the flags and the limits in force inside the very statement that uses
 * them (no read-then-write gap for a concurrent webhook to slip into).
 *
 * The license follows the organisation's best subscription (SPEC 5): the highest tier (tier-table order)
 * among those live now (active, trialing, or past_due within GRACE_PERIOD_DAYS of when it became
 * past_due); when none is live, the one whose last event is newest, which then shows as not active and,
 * when its paid period ended without renewal, expired. No subscription: free, active, not expired.
 *
 * `state` has one row (also for an organisation without subscriptions, or one that does not exist):
 *   tier, is_active, is_expired, tier_known, limits (jsonb of the limits in force), ai_period (start of
 *   the ai_tokens billing period, Unix seconds).
 */
export const licenseStateSql = ({ organisation: $org, tiers: $tiers, graceS: $grace }: LicenseStateParams) => `
  license AS (
    SELECT COALESCE(b.tier, '${FREE_TIER}') AS tier, b.status, b.period_start, b.period_end, b.in_grace, n.now_s
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
           ${$tiers}::jsonb ? tier AS tier_known
    FROM license
  ),
  state AS (
    SELECT tier, is_active, is_expired, tier_known,
           CASE WHEN is_active AND tier_known THEN ${$tiers}::jsonb -> tier ELSE ${$tiers}::jsonb -> '${FREE_TIER}' END AS limits,
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
    tiers = JSON.stringify(Object.fromEntries(Object.entries(config.tiers).map(([tier, limits], rank) => [tier, { ...limits, rank }])));
    tiersJson.set(config, tiers);
  }
  return { organisation: organisationId, tiers, graceS: config.gracePeriodDays * 86_400 };
}
