import { NotificationType } from './notification-message.entity';
import { DELIVERY_TASK } from './job-queue';

/** Where a statement embedding the fragments below keeps its values (see namedParams). */
export interface OutboxParams {
  organisation: string;
  /** text[]: NOTIFY_URLS. */
  urls: string;
}

// ISO 8601 in UTC with milliseconds, like Date.toISOString().
const NOW_ISO = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The outbox write, as common table expressions for the statement that decides a change, so that the
 * decision, the message, its deliveries (one per URL) and their jobs are one round trip and one
 * transaction. `source` names a CTE with one row per message: version, tier, is_active, is_expired and
 * the columns `extraData` (pairs for json_build_object, e.g. `'metric', s.metric`) uses. The statement
 * must reference `queued` (e.g. `(SELECT count(*) FROM queued)`) for the jobs to be added.
 */
export function outboxSql(p: OutboxParams, source: string, type: NotificationType, extraData = ''): string {
  const $org = `${p.organisation}::uuid`;
  return `
  message AS (
    INSERT INTO notification_messages (id, organisation_id, type, version, body)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), ${$org}, '${type}', s.version,
           json_build_object(
             'type', '${type}',
             'timestamp', ${NOW_ISO},
             'data', json_build_object(
               'organisation_id', ${$org},
               'external_id', (SELECT o.external_id FROM organisations o WHERE o.id = ${$org}),
               'tier', s.tier, 'is_active', s.is_active, 'is_expired', s.is_expired, 'version', s.version
               ${extraData ? `, ${extraData}` : ''}))::text
    FROM ${source} s
    RETURNING id
  ),
  delivery AS (
    INSERT INTO notification_deliveries (message_id, url)
    SELECT m.id, u.url FROM message m CROSS JOIN unnest(${p.urls}::text[]) AS u(url)
    RETURNING id
  ),
  queued AS (
    SELECT j.id
    FROM delivery d,
         LATERAL graphile_worker.add_job('${DELIVERY_TASK}', json_build_object('delivery_id', d.id),
                                         job_key => '${DELIVERY_TASK}:' || d.id) AS j
  )`;
}

export interface CapacityParams extends OutboxParams {
  metric: string;
  amount: string;
}

/**
 * For licensing's usage write (one statement): a `usage.capacity` message when the counter change in CTE
 * `counted` (columns used, "limit") moved the metric across its limit in force. The value before is
 * `used - amount` (exact, the counter row being locked by the write; for a decrease stopped at 0 it is
 * the most it can have been). The message's version is taken under the organisation's notice-state row
 * lock, and its license fields are the license last notified, which is what a receiver holds at the
 * previous version. No crossing: the CTEs below do nothing.
 */
export function capacityNotificationSql(p: CapacityParams, counted: string): string {
  return `
  crossed AS (
    SELECT c.used, c."limit", c.used >= c."limit" AS at_capacity FROM ${counted} c
    WHERE (c.used >= c."limit") <> (c.used - ${p.amount}::bigint >= c."limit")
  ),
  bumped AS (
    INSERT INTO notification_states AS n (organisation_id, version)
    SELECT ${p.organisation}::uuid, 1 FROM crossed
    ON CONFLICT (organisation_id) DO UPDATE SET version = n.version + 1
    RETURNING n.version, n.tier, n.is_active, n.is_expired
  ),
  capacity AS (SELECT b.*, c.used, c."limit", c.at_capacity FROM bumped b CROSS JOIN crossed c),
  ${outboxSql(p, 'capacity', 'usage.capacity', `'metric', ${p.metric}::text, 'used', s.used, 'limit', s."limit", 'at_capacity', s.at_capacity`)}`;
}
