import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { licenseArguments } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';

/*
 * The usage rule (spec §7, §13), written once, in SQL: a decrease (projects) always applies and stops at 0;
 * an increase applies when the metric's overage policy is `bill` or when it fits under the limit in force.
 * The usage write folds it over a counter's events in order; the check asks it of one amount.
 */
const accepts = (used: string, amount: string, limit: string, bill: string) => `(${bill} OR ${used} + ${amount} <= ${limit})`;
const step = (used: string, amount: string, limit: string, bill: string) => `
  CASE WHEN ${amount} < 0 THEN GREATEST(${used} + ${amount}, 0)
       WHEN ${accepts(used, amount, limit, bill)} THEN ${used} + ${amount}
       ELSE ${used} END`;
/** Whether `metric` is billed past its limit, by the overage policies in force `overage` (the license's). */
const billed = (overage: string, metric: string) => `COALESCE(${overage} ->> ${metric} = 'bill', false)`;

/**
 * Usage events applied in order, each with the single report's meaning, in one statement: the single report
 * is its one-event case, a batch (or a group of concurrent single reports) the many-event one.
 *
 * - `prior`: events whose idempotency key a live report (< 24 h) already holds apply nothing; they get its
 *   answer, or 409 when the metric or amount differ.
 * - `counters`: the events of each counter, with the license of its organisation (none for an unknown one:
 *   404), computed inside the statement, so no webhook can slip in between the limit read and the write.
 * - `locked`: the counters the events touch, locked in one order (organisation, metric, period), so that
 *   concurrent writers on any instance never deadlock; FOR UPDATE returns each row's latest committed value.
 * - `fold`: the rule above, event after event per counter, from the locked value (recursive: round k is
 *   the k-th event of every counter). A counter's value only moves under its lock, so no writer overshoots.
 * - The counters are written once each with their last value; a counter not there yet is inserted with
 *   it. When a concurrent writer inserted it first, its events come back `0` (applied nothing: retry).
 * - Keys are stored with the answer for events that applied. A key taken meanwhile by a concurrent report
 *   (not visible to `prior`) shows as `keyTaken`: the caller rolls its transaction back and runs again.
 * - `applied`: what each applied event did (organisation, metric, n, amount, before, used, "limit"): handed
 *   on, in this statement, to the modules that account for accepted usage, through their functions (see
 *   applySql).
 *
 * Answers one row per event, in order: status 200 (applied, or a key's first answer in `response`), 402
 * (refused: used and limit as they stood), 404, 409, or 0 (retry).
 *
 * Events without a key go through the statement without its key parts (`keyed` false: no `prior`, `swept`,
 * `keying`, `keyed`), the same text otherwise: PostgreSQL starts every node of a plan at each call, whether
 * it has rows or not, and those parts are a third of the nodes (~15 % of a one-event statement's time).
 */
const APPLY = namedParams('organisations', 'metrics', 'amounts', 'keys', 'urls');
const { organisations: $orgs, metrics: $metrics, amounts: $amounts, keys: $keys } = APPLY.ref;
const PRIOR_SQL = `
  -- Look-ups by key, one index probe per event (a lateral sub-query, never a scan of the table), here and below.
  prior AS (
    SELECT e.n, k.metric = e.metric AND k.amount = e.amount AS same, k.response
    FROM ev e CROSS JOIN LATERAL (
      SELECT k.metric, k.amount, k.response FROM usage_idempotency_keys k
      WHERE k.organisation_id = e.org AND k.key = e.key AND k.created_at >= now() - interval '24 hours' OFFSET 0) k
    WHERE e.key IS NOT NULL
  ),
`;

/** Keys: expired ones swept, and those of applied events stored with their answer. */
const KEY_CTES_SQL = `
  swept AS (
    DELETE FROM usage_idempotency_keys WHERE (organisation_id, key) IN (
      SELECT k.organisation_id, k.key FROM usage_idempotency_keys k
      WHERE k.organisation_id IN (SELECT org FROM ev WHERE key IS NOT NULL)
        AND k.created_at < now() - interval '24 hours'
        AND (k.organisation_id, k.key) NOT IN (SELECT org, key FROM ev WHERE key IS NOT NULL)
      LIMIT 100 FOR UPDATE SKIP LOCKED)
  ),
  keying AS (
    SELECT o.org, e.key, o.metric, o.amount,
           jsonb_build_object('metric', o.metric, 'used', o.used, 'limit', o.lim, 'at_capacity', o.used >= o.lim)
             || CASE WHEN o.bill THEN jsonb_build_object('overage', GREATEST(o.used - o.lim, 0)) ELSE '{}' END AS response
    FROM outcome o JOIN ev e USING (n)
    WHERE e.key IS NOT NULL AND o.accepted AND NOT o.retry
  ),
  keyed AS (
    INSERT INTO usage_idempotency_keys AS k (organisation_id, key, metric, amount, response)
    SELECT org, key, metric, amount, response FROM keying ORDER BY org, key
    ON CONFLICT (organisation_id, key) DO UPDATE
      SET metric = EXCLUDED.metric, amount = EXCLUDED.amount, response = EXCLUDED.response, created_at = now()
      WHERE k.created_at < now() - interval '24 hours'
    RETURNING 1
  )`;

/**
 * The statement's head; `license(org)` is the license of `org` (licensing.license_state) with the tier table and
 * grace period in it as constants (see UsageRepository's constructor).
 */
const applySqlHead = (license: (organisation: string) => string, keyed: boolean) => `
  WITH RECURSIVE
  ev AS (
    -- Each array behind a sub-select: the planner then estimates the events' number the same whether it
    -- sees the values or not, so a connection settles on one generic plan (planned once: ~0.1 ms) instead
    -- of planning every call for the values it knows (~2 ms).
    SELECT e.n::int AS n, e.org, e.metric, e.amount, e.key
    FROM unnest((SELECT ${$orgs}::uuid[]), (SELECT ${$metrics}::text[]), (SELECT ${$amounts}::bigint[]), (SELECT ${$keys}::text[]))
         WITH ORDINALITY AS e(org, metric, amount, key, n)
  ),
  ${keyed ? PRIOR_SQL : ''}
  counters AS (
    -- The events of each counter, with the license of its organisation (none for an unknown one: 404),
    -- computed inside the statement, so no webhook can slip in between the limit read and the write.
    SELECT g.org, g.metric, licensing.counter_period(g.metric, l.ai_period) AS period,
           (l.limits ->> g.metric)::bigint AS lim, ${billed('l.overage', 'g.metric')} AS bill, g.amounts, g.ns
    FROM (SELECT e.org, e.metric, array_agg(e.amount ORDER BY e.n) AS amounts, array_agg(e.n ORDER BY e.n) AS ns
          FROM ev e
          ${keyed ? 'WHERE NOT EXISTS (SELECT 1 FROM prior p WHERE p.n = e.n)' : ''}
          GROUP BY e.org, e.metric) g
    CROSS JOIN LATERAL (SELECT s.limits, s.overage, s.ai_period
                        FROM ${license('g.org')} CROSS JOIN identity.access(g.org, NULL, NULL) a WHERE a.allowed) l
  ),
  locked AS (
    -- One row lock set, taken in one order by one node (not a lock per look-up: PostgreSQL would set up its
    -- recheck of the whole statement again for each row a concurrent writer changed).
    SELECT c.org, c.metric, c.period, c.lim, c.bill, c.amounts, c.ns, u.used
    FROM usage_counters u JOIN counters c ON (u.organisation_id, u.metric, u.period_start) = (c.org, c.metric, c.period)
    ORDER BY u.organisation_id, u.metric, u.period_start
    FOR UPDATE OF u
  ),
  fold AS (
    -- The counters there (from their locked value) and those not there yet (from 0); [NOT] IN (sub-query)
    -- below is a hashed look-up, whatever the number of counters.
    SELECT org, metric, period, 0 AS k, used AS start, NULL::bigint AS before, used, amounts, ns, lim, bill, true AS existed
    FROM locked
    UNION ALL
    SELECT org, metric, period, 0, 0, NULL, 0, amounts, ns, lim, bill, false
    FROM counters WHERE (org, metric, period) NOT IN (SELECT org, metric, period FROM locked)
    UNION ALL
    SELECT org, metric, period, k + 1, start, used, ${step('used', 'amounts[k + 1]', 'lim', 'bill')},
           amounts, ns, lim, bill, existed
    FROM fold WHERE k < cardinality(amounts)
  ),
  final AS (
    SELECT org, metric, period, start, used, existed, amounts FROM fold WHERE k = cardinality(amounts)
  ),
  updated AS (
    UPDATE usage_counters u SET used = f.used, updated_at = now()
    FROM final f
    WHERE f.existed AND f.used <> f.start AND (u.organisation_id, u.metric, u.period_start) = (f.org, f.metric, f.period)
    RETURNING u.organisation_id
  ),
  creating AS (
    -- A decrease on a counter not seen is written too (as 0): the row may have appeared meanwhile.
    SELECT org, metric, period, used FROM final
    WHERE NOT existed AND (used > 0 OR EXISTS (SELECT 1 FROM unnest(amounts) a WHERE a < 0))
  ),
  created AS (
    INSERT INTO usage_counters (organisation_id, metric, period_start, used)
    SELECT org, metric, period, used FROM creating ORDER BY org, metric, period
    ON CONFLICT DO NOTHING
    RETURNING organisation_id AS org, metric, period_start AS period
  ),
  outcome AS (
    SELECT f.ns[f.k] AS n, f.org, f.metric, f.amounts[f.k] AS amount, f.before, f.used, f.lim, f.bill,
           f.amounts[f.k] < 0 OR f.used <> f.before AS accepted,
           NOT f.existed AND (f.org, f.metric, f.period) IN (SELECT org, metric, period FROM creating)
                         AND (f.org, f.metric, f.period) NOT IN (SELECT org, metric, period FROM created) AS retry
    FROM fold f WHERE f.k > 0
  ),
  applied AS (
    SELECT o.org AS organisation_id, o.metric, o.n, o.amount, o.before, o.used, o.lim AS "limit"
    FROM outcome o WHERE o.accepted AND NOT o.retry
  )${keyed ? `,
${KEY_CTES_SQL}` : ''}`;

const applySqlAnswer = (keyed: boolean, handedOn: string) => `
  SELECT e.n,
         CASE ${keyed ? 'WHEN p.n IS NOT NULL THEN (CASE WHEN NOT p.same THEN 409 WHEN p.response IS NULL THEN 0 ELSE 200 END)' : ''}
              WHEN o.n IS NULL THEN 404
              WHEN o.retry THEN 0
              WHEN o.accepted THEN 200
              ELSE 402 END AS status,
         o.used, o.lim AS "limit", o.bill, ${keyed ? 'p.response' : 'NULL::jsonb AS response'},
         ${keyed ? '(SELECT count(*) FROM keying) > (SELECT count(*) FROM keyed)' : 'false'} AS "keyTaken",
         ${handedOn}
  FROM ev e ${keyed ? 'LEFT JOIN prior p USING (n)' : ''} LEFT JOIN outcome o USING (n)
  ORDER BY e.n`;

/**
 * What the statement hands on of its applied events, each to the module that accounts for it, through that
 * module's function (one round trip still): with NOTIFY_URLS, the events that moved a metric across its limit
 * in force to notifications (`usage.capacity` messages); with a provider meter configured, the accepted usage
 * to billing's meter windows (spec §13). Each is called once, and only with events to hand on.
 */
const CAPACITY_SQL = `
  capacity AS (
    SELECT notifications.capacity_crossed(array_agg(a.organisation_id ORDER BY a.n), array_agg(a.metric ORDER BY a.n),
                                          array_agg(a.used ORDER BY a.n), array_agg(a."limit" ORDER BY a.n), ${APPLY.ref.urls}::text[]) AS queued
    FROM applied a WHERE (a.used >= a."limit") <> (a.before >= a."limit")
    HAVING count(*) > 0
  )`;
const meteredSql = (metrics: string[], flushS: number) => `
  metered AS (
    SELECT billing.meter_usage(array_agg(a.organisation_id ORDER BY a.n), array_agg(a.metric ORDER BY a.n),
                               array_agg(a.amount ORDER BY a.n), ARRAY[${metrics.map((m) => `'${m}'`).join(', ')}]::text[], ${flushS}) AS windows
    FROM applied a
    HAVING count(*) > 0
  )`;

const applySql = (license: (organisation: string) => string, keyed: boolean, handOn: { capacity: boolean; meters?: { metrics: string[]; flushS: number } }) => {
  const ctes = [handOn.capacity ? CAPACITY_SQL : '', handOn.meters ? meteredSql(handOn.meters.metrics, handOn.meters.flushS) : ''].filter(Boolean);
  const columns = [
    handOn.capacity ? 'COALESCE((SELECT queued FROM capacity), 0) AS queued' : '0 AS queued',
    ...(handOn.meters ? ['COALESCE((SELECT windows FROM metered), 0) AS metered'] : []),
  ];
  return `${applySqlHead(license, keyed)}${ctes.map((cte) => `, ${cte}`).join('')}
   ${applySqlAnswer(keyed, columns.join(', '))}`;
};

/**
 * The check (spec §7, §13): the used amount of the metric, its limit in force, and whether `amount` more
 * would be accepted now. No row: not readable by the caller (identity.access).
 */
const CHECK = namedParams('organisation', 'tiers', 'graceS', 'user', 'metric', 'amount');
const { organisation: $org, metric: $metric, amount: $amount } = CHECK.ref;
const CHECK_SQL = `
  WITH r AS (
    SELECT CASE WHEN ${$metric}::text = 'users' THEN (SELECT count(*) FROM identity.members(${$org}::uuid))
                ELSE COALESCE((SELECT used FROM usage_counters
                               WHERE organisation_id = ${$org}::uuid AND metric = ${$metric}::text
                                 AND period_start = licensing.counter_period(${$metric}::text, s.ai_period)), 0) END AS used,
           (s.limits ->> ${$metric}::text)::bigint AS lim,
           ${billed('s.overage', `${$metric}::text`)} AS bill
    FROM licensing.license_state(${$org}::uuid, ${CHECK.ref.tiers}::jsonb, ${CHECK.ref.graceS}::bigint) s
    CROSS JOIN identity.access(${$org}::uuid, ${CHECK.ref.user}::uuid, NULL) a
    WHERE a.allowed
  )
  SELECT used, lim AS "limit", COALESCE(${accepts('used', `${$amount}::bigint`, 'lim', 'bill')}, false) AS allowed FROM r`;

/** A string as an SQL literal (an escape string: the same whatever standard_conforming_strings says). */
const sqlLiteral = (text: string) => `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

export interface UsageEvent {
  organisationId: string;
  /** A metric back-ends report: projects, ai_tokens or a further metric of the tier table (see checkEvent). */
  metric: string;
  amount: number;
  idempotencyKey?: string;
}

/** What the usage statement answered for one event (see applySqlHead). */
export interface AppliedRow {
  /** 200, 402, 404, 409, or 0: nothing applied, run it again. */
  status: number;
  used: number | null;
  limit: number | null;
  /** The metric's overage policy is `bill`. */
  bill: boolean | null;
  /** A key's first answer (status 200 for a repeat). */
  response: UsageAnswer | null;
  /** A key was taken by a concurrent report after this statement looked: roll back and run again. */
  keyTaken: boolean;
}

/** The answer of a single report (spec §7, §13), as stored with its idempotency key. */
export interface UsageAnswer {
  metric: string;
  used: number;
  limit: number;
  at_capacity: boolean;
  overage?: number;
}

export interface CheckRow {
  used: number;
  limit: number;
  allowed: boolean;
}

/** Usage counters and idempotency keys. The usage statement is the hot write: hand-written, prepared. */
@Injectable()
export class UsageRepository {
  private readonly notifying: boolean;
  /** The usage statement for events with a key among them, and for events without any. */
  private readonly applySql: { keyed: string; keyless: string };

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {
    this.notifying = config.notifyUrls.length > 0;
    // The tier table and the grace period are fixed for the process: written into the statement as constants,
    // PostgreSQL parses the tier table once, when it plans the statement, instead of at every call (~10 % of
    // a one-event statement's time as a parameter).
    const { tiers, graceS } = licenseArguments(config);
    const license = (organisation: string) => `licensing.license_state(${organisation}, ${sqlLiteral(tiers)}::jsonb, ${Number(graceS)}) s`;
    const metrics = Object.keys(config.providerMeters);
    const handOn = { capacity: this.notifying, meters: metrics.length ? { metrics, flushS: config.meterFlushS } : undefined };
    this.applySql = { keyed: applySql(license, true, handOn), keyless: applySql(license, false, handOn) };
  }

  /** Applies the events in order (no two with the same organisation and key); one row per event. */
  async apply(events: UsageEvent[], m: EntityManager = this.db.manager): Promise<AppliedRow[]> {
    const values = APPLY.values({
      organisations: events.map((e) => e.organisationId),
      metrics: events.map((e) => e.metric),
      amounts: events.map((e) => e.amount),
      keys: events.map((e) => e.idempotencyKey ?? null),
      urls: this.config.notifyUrls,
    });
    const sql = events.some((e) => e.idempotencyKey !== undefined) ? this.applySql.keyed : this.applySql.keyless;
    return preparedQuery<AppliedRow>(m, sql, this.notifying ? values : values.slice(0, -1));
  }

  /** Undefined when the caller may not read the organisation (see LicensingRepository.status). */
  async check(organisationId: string, userId: string | null, metric: string, amount: number): Promise<CheckRow | undefined> {
    const values = CHECK.values({ organisation: organisationId, ...licenseArguments(this.config), user: userId, metric, amount });
    const [row] = await preparedQuery<CheckRow>(this.db, CHECK_SQL, values);
    return row;
  }
}
