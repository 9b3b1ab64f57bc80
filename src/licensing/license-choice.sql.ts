import { subscriptionSql } from '../subscriptions/subscriptions.repository';

/*
 * The rule that chooses the subscription an organisation's license follows (spec §5), written once as SQL
 * fragments: the license state (licenseStateSql) takes the first candidate in this order, and the explain read
 * (explain.repository.ts) takes the chosen one from that same license state and names, for each other
 * candidate, the first of these keys on which it lost. A new key added here changes both.
 */

export interface LicenseChoiceParams {
  organisation: string;
  /** The tier table as jsonb (licenseStateValues): `rank` is a tier's place in it. */
  tiers: string;
  /** The grace period in seconds. */
  graceS: string;
  /** Now, in Unix seconds. */
  nowS: string;
}

/**
 * The ordering keys, most significant first; the best candidate sorts first on each (DESC, NULLS LAST), and
 * `lostOn` is what a candidate that differs from the chosen one on this key lost by.
 */
export const LICENSE_CHOICE_KEYS = [
  { column: 'live', lostOn: 'not_live' },
  { column: 'tier_rank', lostOn: 'lower_tier' },
  { column: 'last_event_created', lostOn: 'older' },
] as const;

/** Why a candidate other than the chosen one was not chosen: `tie` when it equals the chosen one on every key. */
export type ChoiceLoss = (typeof LICENSE_CHOICE_KEYS)[number]['lostOn'] | 'tie';

export const licenseChoiceSql = {
  /**
   * Billing's license candidates (subscriptionSql.licenseCandidates) with the ordering keys: `in_grace`
   * (past_due, and now within the grace period of when it became so), `live` (active, trialing or in grace),
   * `tier_rank` (null for a tier the table no longer lists), and `last_event_created`.
   */
  ranked: ({ organisation, tiers, graceS, nowS }: LicenseChoiceParams) => `
    SELECT c.*, c.status IN ('active', 'trialing') OR c.in_grace AS live, (${tiers}::jsonb -> c.tier ->> 'rank')::int AS tier_rank
    FROM (
      SELECT s.*, COALESCE(s.status = 'past_due' AND ${nowS} <= COALESCE(s.past_due_since, s.period_end) + ${graceS}::bigint, false) AS in_grace
      FROM (${subscriptionSql.licenseCandidates(`${organisation}::uuid`)}) AS s
    ) AS c`,

  /** ORDER BY of `ranked`'s rows: the chosen one first. */
  order: LICENSE_CHOICE_KEYS.map((k) => `${k.column} DESC NULLS LAST`).join(', '),

  /** Of a ranked row `r` other than the chosen `chosen`: the first key it lost on (ChoiceLoss). */
  lostOn: (r: string, chosen: string) =>
    `CASE ${LICENSE_CHOICE_KEYS.map((k) => `WHEN ${r}.${k.column} IS DISTINCT FROM ${chosen}.${k.column} THEN '${k.lostOn}'`).join(' ')} ELSE 'tie' END`,
};
