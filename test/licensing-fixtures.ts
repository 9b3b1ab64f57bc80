import { TestApp } from './support/test-app';

export const DAY = 86_400;
export const nowS = () => Math.floor(Date.now() / 1000);

/** Start of the current calendar month (UTC), Unix seconds: the ai_tokens period of a free organisation. */
export const monthStartS = (monthsAgo = 0) => {
  const d = new Date();
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - monthsAgo, 1) / 1000;
};

export interface LicenseRow {
  tier: string;
  status: string | null;
  periodStart?: number | null;
  periodEnd?: number | null;
  /** When it became past_due (grace counts from here); default: now for past_due, else none. */
  pastDueSince?: number | null;
  /** A customer.subscription.deleted event was applied to it. */
  deleted?: boolean;
  /** Another subscription of the organisation (default: its one subscription). */
  subscriptionId?: string;
}

/**
 * Writes the organisation's subscription the way the webhook handlers do (plain SQL, provider timestamps
 * in seconds); its license is derived from it.
 */
export async function setLicense(t: TestApp, organisationId: string, row: LicenseRow) {
  const start = row.periodStart === undefined ? nowS() - 10 * DAY : row.periodStart;
  const end = row.periodEnd === undefined ? nowS() + 20 * DAY : row.periodEnd;
  const pastDueSince = row.pastDueSince !== undefined ? row.pastDueSince : row.status === 'past_due' ? nowS() : null;
  await t.db.query(
    `INSERT INTO provider_subscriptions (subscription_id, organisation_id, tier, status, current_period_start,
                           current_period_end, past_due_since, last_event_created, last_event_rank, deleted_event_created)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, CASE WHEN $9 THEN $8::bigint END)
     ON CONFLICT (subscription_id) DO UPDATE SET tier = EXCLUDED.tier, status = EXCLUDED.status,
       current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
       past_due_since = EXCLUDED.past_due_since, last_event_created = EXCLUDED.last_event_created,
       deleted_event_created = EXCLUDED.deleted_event_created, updated_at = now()`,
    [row.subscriptionId ?? `sub_test_${organisationId}`, organisationId, row.tier, row.status, start, end, pastDueSince, nowS(), row.deleted ?? false],
  );
}

/** Sets a counter directly, e.g. above the limit to simulate a downgrade. `period` 0 = the projects gauge. */
export async function setUsage(t: TestApp, organisationId: string, metric: string, used: number, period = 0) {
  await t.db.query(
    `INSERT INTO usage_counters (organisation_id, metric, period_start, used) VALUES ($1, $2, $3, $4)
     ON CONFLICT (organisation_id, metric, period_start) DO UPDATE SET used = EXCLUDED.used`,
    [organisationId, metric, period, used],
  );
}

/** Every counter row of the organisation, for "nothing changed" assertions. */
export async function counters(t: TestApp, organisationId: string) {
  return t.db.query(
    `SELECT metric, period_start, used FROM usage_counters WHERE organisation_id = $1 ORDER BY metric, period_start`,
    [organisationId],
  );
}

export const errorBody = (statusCode: number, code: string) => ({
  statusCode,
  error: expect.any(String),
  message: expect.any(String),
  code,
});
