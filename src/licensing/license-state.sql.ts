import { AppConfig } from '../config/app-config';
import { FREE_TIER } from '../config/tiers';

/** Where a statement embedding `licenseStateSql` keeps the values of `licenseStateValues` (see namedParams). */
export interface LicenseStateParams {
  organisation: string;
  /** The tier table (jsonb, tier → limits). */
  tiers: string;
  /** The grace period in seconds. */
  graceS: string;
}

/**
 * The license state of an organisation, as SQL common table expressions, so that the status read and the
 * usage write compute the tier, the flags and the limits in force inside the very statement that uses
 * them (no read-then-write gap for a concurrent webhook to slip into).
 *
 * `state` has one row (also for an organisation without a license row, or one that does not exist):
 *   tier, is_active, is_expired, tier_known, limits (jsonb of the limits in force), ai_period (start of
 *   the ai_tokens billing period, Unix seconds).
 */
export const licenseStateSql = ({ organisation: $org, tiers: $tiers, graceS: $grace }: LicenseStateParams) => `
  license AS (
    SELECT COALESCE(l.tier, '${FREE_TIER}') AS tier,
           l.subscription_status AS status,
           l.current_period_start AS period_start,
           l.current_period_end AS period_end,
           extract(epoch FROM now())::bigint AS now_s
    FROM (SELECT 1) AS one
    LEFT JOIN licenses l ON l.organisation_id = ${$org}::uuid
  ),
  flags AS (
    SELECT license.*,
           COALESCE(
             tier = '${FREE_TIER}'
             OR status IN ('active', 'trialing')
             OR (status = 'past_due' AND now_s <= period_end + ${$grace}::bigint),
             false) AS is_active,
           COALESCE(
             tier <> '${FREE_TIER}' AND (
               status IN ('unpaid', 'incomplete_expired', 'canceled')
               OR (status = 'past_due' AND now_s > period_end + ${$grace}::bigint)),
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
    tiers = JSON.stringify(config.tiers);
    tiersJson.set(config, tiers);
  }
  return { organisation: organisationId, tiers, graceS: config.gracePeriodDays * 86_400 };
}
