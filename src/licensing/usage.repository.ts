import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Overage } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { licenseConstants } from './license-state';
import { UsageContended } from './usage-errors';

/*
 * The usage rule (spec §7, §13, §16), written once, in SQL. A counter's room is what it may still take: no bound
 * for a `bill` metric (NULL); for `block`, the limit in force less what is used and what live reservations hold;
 * for `credits`, what is left of the included amount plus the balance of the grants that count, less the holds. A
 * report or a hold is accepted when its amount fits the room (a commit may also use its own live hold); a
 * decrease (projects) always applies and stops at 0. The usage write folds it over a counter's events in order;
 * the check asks it of one amount.
 */
const roomOf = (policy: string, limit: string, used: string, balance: string, held: string) => `
  (CASE WHEN ${policy} = 'bill' THEN NULL
        ELSE (CASE WHEN ${policy} = 'credits' THEN GREATEST(${limit} - ${used}, 0) + ${balance} ELSE ${limit} - ${used} END) - ${held} END)`;
const accepts = (amount: string, room: string) => `(${room} IS NULL OR ${amount} <= ${room})`;
/**
 * Spend alerts (spec §16.4), written into the statement as constants: USAGE_ALERT_THRESHOLDS (ascending) and
 * CREDITS_LOW_THRESHOLD_PCT. A counter of a metric counted per period with a positive limit has its `marks`: the
 * used amount at which each threshold is reached (a percentage of the limit, rounded up), computed once per
 * counter; an event's level is the highest threshold its used amount reaches (0: none).
 */
export interface SpendAlerts {
  thresholds: number[];
  lowPct: number;
}
const alertMarks = (period: string, lim: string, thresholds: number[]) =>
  `CASE WHEN ${period} > 0 AND ${lim} > 0 THEN ARRAY[${thresholds.map((t) => `ceil(${lim}::numeric * ${t} / 100)::bigint`).join(', ')}] END`;
const alertLevel = (used: string, marks: string, thresholds: number[]) =>
  `(CASE ${thresholds
    .map((t, i) => `WHEN ${used} >= ${marks}[${i + 1}] THEN ${t}`)
    .reverse()
    .join(' ')} ELSE 0 END)`;

/** A metric's overage policy in force (block, bill or credits), from the license's `overage`. */
const policyOf = (overage: string, metric: string) => `COALESCE(${overage} ->> ${metric}, 'block')`;

/**
 * Usage events applied in order, each with the single report's meaning, in one statement: the single report
 * is its one-event case, a batch (or a group of concurrent single reports) the many-event one. An event is a
 * report, a hold (a reservation, spec §16.5: it takes room, not usage) or a commit (a reservation's spend: a
 * report of its amount that may use its own live hold, made once per reservation).
 *
 * - `prior`: reports and holds whose idempotency key a live report (< 24 h) already holds apply nothing; they get
 *   its answer, or 409 when the metric or amount differ. `early`: commits that cannot apply (unknown reservation,
 *   more than it holds, released) or need not (committed: the same amount answers what the commit answered, kept
 *   with the reservation; another is 409). A commit takes no idempotency key: its reservation is its key.
 * - `counters`: the events of each counter, with the license of its organisation (none for an unknown one:
 *   404), computed inside the statement, so no webhook can slip in between the limit read and the write.
 * - `locked`: the counters the events touch, locked in one order (organisation, metric, period), so that
 *   concurrent writers on any instance never deadlock; FOR UPDATE returns each row's latest committed value,
 *   and `moved` says that a writer committed to it after this statement's snapshot was taken.
 * - `roomed`: (first, for a credits metric whose counter of the period does not exist yet, the organisation's
 *   rollovers of the period, credits.roll_over, once whoever makes them) what the counter's room is made of besides
 *   the counter: the live holds, and for a credits metric
 *   the balance. Read fresh through credits.room once the counter's lock is held (which also locks the grants)
 *   for a credits metric or a counter that moved (a hold committed meanwhile is not in this statement's
 *   snapshot; every hold writes its counter, so it moves it); else from the snapshot, which then misses nothing.
 * - `fold`: the rule above, event after event per counter (recursive: round k is the k-th event of every
 *   counter). A counter's room only shrinks under its lock, so no writer overshoots and no grant is overdrawn.
 *   `drawn` is what the counter's accepted reports took from grants so far (usage past the included amount).
 * - The counters are written once each with their last value (also when only holds or commits touched them,
 *   so that concurrent writers see them move); a counter not there yet is inserted. When a concurrent writer
 *   inserted it first, its events have status `0` (nothing applied: run again).
 * - Keys are stored with the answer for reports and holds that applied; a commit's answer and amount are stored with
 *   its reservation (credits.settle_commits). A key taken meanwhile by a concurrent report (not visible to
 *   `prior`), or a reservation released or committed meanwhile, is found after the writes.
 * - All or nothing: an event with status 0, a key taken or a reservation settled meanwhile fails the whole statement
 *   with serialization_failure (licensing.usage_uncontended), which rolls back everything it wrote (UsageContended):
 *   the caller runs it again, and needs no transaction around a single statement.
 * - The fold also keeps each counter's spend-alert state (spec §16.4), written with the counter: the highest
 *   USAGE_ALERT_THRESHOLDS level its period reached (`alerted_threshold`), and for a credits metric whether its
 *   last event left `available` below the low threshold (`credits_low`, see alertsSql). Both are read and written
 *   under the counter's lock, so each alert is made once whichever instance writes.
 * - `applied`: what each applied event did, handed on, in this statement, to the modules that account for it
 *   through their functions: the grants' consumption, holds and commits to credits; `usage.capacity` and the
 *   spend alerts to notifications, accepted usage to billing's meter windows (see applySql).
 *
 * Answers one row per event, in order: status 200 (201 for a hold; applied, or a key's first answer in
 * `response`), 400, 402, 404 or 409 with the error's `code`.
 *
 * Plain reports without keys go through the statement without the key and reservation parts (`keyed` false:
 * no `prior`, `early`, `swept`, `keying`, `keyed`, holds or commits), the same text otherwise: PostgreSQL starts
 * every node of a plan at each call, whether it has rows or not, and those parts are a third of the nodes.
 */
const KEYED = namedParams('organisations', 'metrics', 'amounts', 'keys', 'reservations', 'ttls', 'urls');
const KEYLESS = namedParams('organisations', 'metrics', 'amounts', 'urls');
const { keys: $keys, reservations: $res, ttls: $ttls } = KEYED.ref;
/** The statement's parameters: every array for a keyed statement; a keyless one has no keys, reservations or hold times. */
const paramsOf = (keyed: boolean) => (keyed ? KEYED.ref : KEYLESS.ref);
const PRIOR_SQL = `
  -- Look-ups by key, one index probe per event (a lateral sub-query, never a scan of the table), here and below.
  prior AS (
    SELECT e.n, k.metric = e.metric AND k.amount = e.amount AS same, k.response
    FROM ev e CROSS JOIN LATERAL (
      SELECT k.metric, k.amount, k.response FROM usage_idempotency_keys k
      WHERE k.organisation_id = e.org AND k.key = e.key AND k.created_at >= now() - interval '24 hours' OFFSET 0) k
    WHERE e.key IS NOT NULL
  ),
  early AS (
    SELECT e.n, CASE WHEN e.res_org IS NULL OR e.res_org <> e.org THEN 'reservation_not_found'
                     WHEN e.res_status = 'committed' AND e.amount = e.res_spent THEN 'committed'
                     WHEN e.res_status = 'committed' THEN 'reservation_committed'
                     WHEN e.amount > e.reserved THEN 'reservation_exceeded'
                     WHEN e.res_status = 'released' THEN 'reservation_released' END AS code
    FROM ev e
    WHERE e.kind = 'commit'
      AND (e.res_org IS NULL OR e.res_org <> e.org OR e.amount > e.reserved OR e.res_status IN ('released', 'committed'))
  ),
`;

/** A key's stored answer, and the one a commit leaves on its reservation: what a single report would answer. */
const ANSWER_JSON = `
  CASE WHEN o.kind = 'hold'
       THEN jsonb_build_object('id', o.hold_id, 'organisation_id', o.org, 'metric', o.metric, 'amount', o.amount,
                               'expires_at', to_char(o.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
       ELSE jsonb_build_object('metric', o.metric, 'used', o.used, 'limit', o.lim, 'at_capacity', o.used >= o.lim)
            || CASE WHEN o.policy = 'bill' THEN jsonb_build_object('overage', GREATEST(o.used - o.lim, 0)) ELSE '{}' END
            || CASE WHEN o.policy = 'credits' THEN jsonb_build_object('balance', o.balance, 'available', o.available) ELSE '{}' END
            || CASE WHEN o.kind = 'commit' AND o.own = 0 THEN '{"expired": true}'::jsonb ELSE '{}' END END`;

/** Keys: expired ones swept, and those of applied events stored with their answer; holds and commits handed on. */
const KEY_CTES_SQL = `
  sweepable AS (
    -- Up to 10 an organisation and 100 in all, found through each organisation's keys by age: never a scan of the
    -- table, whatever the planner believes its size to be (a plan made while the table was small is kept by the
    -- connection; a join here scanned the whole table at every call).
    SELECT ARRAY(
      SELECT k.ctid FROM (SELECT DISTINCT org FROM ev WHERE key IS NOT NULL) o
      CROSS JOIN LATERAL (
        SELECT k.ctid FROM usage_idempotency_keys k
        WHERE k.organisation_id = o.org AND k.created_at < now() - interval '24 hours'
          AND (k.organisation_id, k.key) NOT IN (SELECT org, key FROM ev WHERE key IS NOT NULL)
        ORDER BY k.created_at LIMIT 10 FOR UPDATE SKIP LOCKED) k
      LIMIT 100) AS tids
  ),
  swept AS (
    -- Deleted by their row address, and only when there are some: such a plan reads the table whole to find them.
    DELETE FROM usage_idempotency_keys
    WHERE ctid = ANY ((SELECT tids FROM sweepable)::tid[]) AND (SELECT cardinality(tids) > 0 FROM sweepable)
  ),
  answers AS (
    SELECT o.*, ${ANSWER_JSON} AS response FROM applied o
  ),
  keying AS (
    SELECT a.org, a.key, a.metric, a.amount, a.response FROM answers a WHERE a.key IS NOT NULL
  ),
  keyed AS (
    INSERT INTO usage_idempotency_keys AS k (organisation_id, key, metric, amount, response)
    SELECT org, key, metric, amount, response FROM keying ORDER BY org, key
    ON CONFLICT (organisation_id, key) DO UPDATE
      SET metric = EXCLUDED.metric, amount = EXCLUDED.amount, response = EXCLUDED.response, created_at = now()
      WHERE k.created_at < now() - interval '24 hours'
    RETURNING 1
  ),
  held AS (
    SELECT credits.hold(array_agg(a.hold_id ORDER BY a.n), array_agg(a.org ORDER BY a.n), array_agg(a.metric ORDER BY a.n),
                        array_agg(a.amount ORDER BY a.n), array_agg(a.expires_at ORDER BY a.n)) AS holds
    FROM applied a WHERE a.kind = 'hold'
    HAVING count(*) > 0
  ),
  settled AS (
    SELECT credits.settle_commits(array_agg(a.res ORDER BY a.n), array_agg(a.amount ORDER BY a.n), array_agg(a.response ORDER BY a.n),
                                  array_agg(CASE WHEN a.policy = 'credits' AND a.own > 0 THEN a.own - a.amount ELSE 0 END ORDER BY a.n),
                                  array_agg(a.balance ORDER BY a.n)) AS commits
    FROM answers a WHERE a.kind = 'commit'
    HAVING count(*) > 0
  )`;

/** Each event, from the statement's arrays: for a commit, its organisation and metric are its reservation's. */
const evSql = (keyed: boolean, { organisations: $orgs, metrics: $metrics, amounts: $amounts } = paramsOf(keyed)) =>
  keyed
    ? `
  ev AS (
    -- Each array behind a sub-select: the planner then estimates the events' number the same whether it
    -- sees the values or not, so a connection settles on one generic plan (planned once: ~0.1 ms) instead
    -- of planning every call for the values it knows (~2 ms).
    SELECT e.n::int AS n, COALESCE(e.org, r.organisation_id) AS org, COALESCE(e.metric, r.metric) AS metric, e.amount,
           CASE WHEN e.ttl IS NOT NULL THEN 'hold ' || e.key WHEN e.res IS NULL THEN e.key END AS key,
           CASE WHEN e.res IS NOT NULL THEN 'commit' WHEN e.ttl IS NOT NULL THEN 'hold' ELSE 'report' END AS kind,
           e.res, e.ttl, r.organisation_id AS res_org, r.amount AS reserved, r.status AS res_status, r.spent AS res_spent,
           r.response AS res_response,
           CASE WHEN e.ttl IS NOT NULL THEN gen_random_uuid() END AS hold_id
    FROM unnest((SELECT ${$orgs}::uuid[]), (SELECT ${$metrics}::text[]), (SELECT ${$amounts}::bigint[]), (SELECT ${$keys}::text[]),
                (SELECT ${$res}::uuid[]), (SELECT ${$ttls}::int[]))
         WITH ORDINALITY AS e(org, metric, amount, key, res, ttl, n)
    -- A sub-query kept apart (OFFSET 0): one primary-key probe per commit, never a join that scans the reservations.
    LEFT JOIN LATERAL (SELECT * FROM credits.reservation(e.res) OFFSET 0) r ON true
  ),`
    : `
  ev AS (
    SELECT e.n::int AS n, e.org, e.metric, e.amount, NULL::text AS key, 'report' AS kind, NULL::uuid AS res, NULL::int AS ttl,
           NULL::bigint AS reserved, NULL::uuid AS hold_id
    FROM unnest((SELECT ${$orgs}::uuid[]), (SELECT ${$metrics}::text[]), (SELECT ${$amounts}::bigint[])) WITH ORDINALITY AS e(org, metric, amount, n)
  ),`;

/**
 * The statement's head; `license(org)` is the license of `org` (licensing.license_state) and `tiers` the tier
 * table, as constants (see UsageRepository's constructor).
 */
const applySqlHead = (
  license: (organisation: string) => string,
  tiers: string,
  keyed: boolean,
  rollOver: (organisation: string) => string,
  alerts: SpendAlerts,
) => `
  WITH RECURSIVE
  ${evSql(keyed)}
  ${keyed ? PRIOR_SQL : ''}
  counters AS (
    SELECT g.org, g.metric, licensing.counter_period(${tiers}, g.metric, l.ai_period) AS period,
           (l.limits ->> g.metric)::bigint AS lim, ${policyOf('l.overage', 'g.metric')} AS policy, g.amounts, g.ns, g.kinds, g.res, g.reserved
    FROM (SELECT e.org, e.metric, array_agg(e.amount ORDER BY e.n) AS amounts, array_agg(e.n ORDER BY e.n) AS ns,
                 ${keyed ? 'array_agg(e.kind ORDER BY e.n)' : 'NULL::text[]'} AS kinds,
                 ${keyed ? 'array_agg(e.res ORDER BY e.n)' : 'NULL::uuid[]'} AS res,
                 ${keyed ? 'array_agg(e.reserved ORDER BY e.n)' : 'NULL::bigint[]'} AS reserved
          FROM ev e
          ${keyed ? 'WHERE NOT EXISTS (SELECT 1 FROM prior p WHERE p.n = e.n) AND NOT EXISTS (SELECT 1 FROM early x WHERE x.n = e.n)' : ''}
          GROUP BY e.org, e.metric) g
    CROSS JOIN LATERAL (SELECT s.limits, s.overage, s.ai_period
                        FROM ${license('g.org')} CROSS JOIN identity.access(g.org, NULL, NULL) a WHERE a.allowed) l
  ),
  locked AS (
    -- One row lock set, taken in one order by one node (not a lock per look-up: PostgreSQL would set up its
    -- recheck of the whole statement again for each row a concurrent writer changed).
    SELECT c.org, c.metric, c.period, c.lim, c.policy, c.amounts, c.ns, c.kinds, c.res, c.reserved, u.used,
           u.alerted_threshold AS alerted, u.credits_low AS low,
           u.xmin::text IS DISTINCT FROM (SELECT v.xmin::text FROM usage_counters v
                                          WHERE (v.organisation_id, v.metric, v.period_start) = (c.org, c.metric, c.period)) AS moved
    FROM usage_counters u JOIN counters c ON (u.organisation_id, u.metric, u.period_start) = (c.org, c.metric, c.period)
    ORDER BY u.organisation_id, u.metric, u.period_start
    FOR UPDATE OF u
  ),
  roomed AS (
    -- [NOT] IN (sub-query) below is a hashed look-up, whatever the number of counters.
    SELECT s.*, r.held, r.balance, r.live, ${alertMarks('s.period', 's.lim', alerts.thresholds)} AS marks,
           CASE WHEN s.policy = 'credits' THEN COALESCE((SELECT t.threshold FROM credits.recharge_threshold(s.org, s.metric) t), s.lim * ${alerts.lowPct} / 100) END AS thr
    FROM (SELECT org, metric, period, lim, policy, amounts, ns, kinds, res, reserved, used, alerted, low, true AS existed, moved FROM locked
          UNION ALL
          SELECT org, metric, period, lim, policy, amounts, ns, kinds, res, reserved, 0, 0, false, false, false
          FROM counters WHERE (org, metric, period) NOT IN (SELECT org, metric, period FROM locked)) s
    CROSS JOIN LATERAL (
      -- A credits metric's first use in a period makes the organisation's rollovers of it first (once, whoever
      -- makes them: credits.roll_over), so that its room counts them; room reads after it (it takes its result).
      SELECT x.held, x.balance, x.live
      FROM (SELECT CASE WHEN s.policy = 'credits' AND NOT s.existed THEN ${rollOver('s.org')} ELSE 0 END AS rolled) ro
      CROSS JOIN LATERAL credits.room(s.org, s.metric, s.policy = 'credits' AND ro.rolled >= 0, s.res) x
      WHERE s.policy = 'credits' OR s.moved
      UNION ALL
      SELECT COALESCE(sum(h.amount), 0)::bigint, 0::bigint, COALESCE(array_agg(h.id) FILTER (WHERE h.id = ANY (s.res)), '{}')
      FROM credits.live_holds(s.org, s.metric) h
      HAVING NOT (s.policy = 'credits' OR s.moved)
    ) r
  ),
  fold AS (
    SELECT org, metric, period, 0 AS k, used AS start, NULL::bigint AS before, used, true AS ok,
           ${roomOf('policy', 'lim', 'used', 'balance', 'held')} AS room, 0::bigint AS own, 0::bigint AS draw, 0::bigint AS drawn,
           false AS touched, amounts, ns, kinds, res, reserved, live, lim, policy, balance, existed,
           marks, thr, alerted, alerted AS alerted_from,
           -- Below the low threshold already: announced (stored), or, for a counter not there yet, at the period's start.
           COALESCE(policy = 'credits' AND ${roomOf('policy', 'lim', 'used', 'balance', 'held')} < thr AND (low OR NOT existed), false) AS low,
           false AS warned
    FROM roomed
    UNION ALL
    SELECT f.org, f.metric, f.period, f.k + 1, f.start, f.used, s.used, s.ok, s.room, s.own, s.draw, f.drawn + s.draw,
           f.touched OR (s.ok AND s.kind <> 'report'), f.amounts, f.ns, f.kinds, f.res, f.reserved, f.live, f.lim, f.policy,
           f.balance, f.existed, f.marks, f.thr,
           CASE WHEN s.ok AND s.kind <> 'hold' THEN GREATEST(f.alerted, ${alertLevel('s.used', 'f.marks', alerts.thresholds)}) ELSE f.alerted END,
           f.alerted,
           CASE WHEN s.ok AND f.policy = 'credits' THEN COALESCE(s.room < f.thr, false) ELSE f.low END,
           COALESCE(s.ok AND f.policy = 'credits' AND s.room < f.thr AND NOT f.low, false)
    FROM fold f
    CROSS JOIN LATERAL (
      SELECT a.kind, a.own, x.ok, x.used,
             CASE WHEN NOT x.ok THEN f.room WHEN a.kind = 'hold' THEN f.room - a.amount WHEN a.amount < 0 THEN f.room + (f.used - x.used)
                  ELSE f.room + a.own - a.amount END AS room,
             CASE WHEN f.policy = 'credits' THEN GREATEST(x.used - f.lim, 0) - GREATEST(f.used - f.lim, 0) ELSE 0 END AS draw
      FROM (SELECT COALESCE(f.kinds[f.k + 1], 'report') AS kind, f.amounts[f.k + 1] AS amount,
                   CASE WHEN f.kinds[f.k + 1] = 'commit' AND f.res[f.k + 1] = ANY (f.live) THEN f.reserved[f.k + 1] ELSE 0 END AS own) a
      CROSS JOIN LATERAL (SELECT (a.kind <> 'hold' AND a.amount < 0) OR ${accepts('a.amount', 'f.room + a.own')} AS ok) o
      CROSS JOIN LATERAL (
        SELECT o.ok, CASE WHEN NOT o.ok OR a.kind = 'hold' THEN f.used WHEN a.amount < 0 THEN GREATEST(f.used + a.amount, 0)
                          ELSE f.used + a.amount END AS used) x
    ) s
    WHERE f.k < cardinality(f.amounts)
  ),
  final AS (
    SELECT org, metric, period, start, used, existed, touched, amounts, alerted, low FROM fold WHERE k = cardinality(amounts)
  ),
  updated AS (
    -- The counters it locked (so none is inserted), written through their primary key: an upsert finds each by its
    -- conflict, where an UPDATE … FROM is a join the planner may make a scan of the table (it does in a plan made
    -- while the table was small, which the connection keeps).
    INSERT INTO usage_counters AS u (organisation_id, metric, period_start, used, alerted_threshold, credits_low)
    SELECT f.org, f.metric, f.period, f.used, f.alerted, f.low FROM final f
    WHERE f.existed AND (f.used <> f.start OR f.touched)
    ON CONFLICT (organisation_id, metric, period_start) DO UPDATE
      SET used = EXCLUDED.used, alerted_threshold = EXCLUDED.alerted_threshold, credits_low = EXCLUDED.credits_low, updated_at = now()
    RETURNING u.organisation_id
  ),
  creating AS (
    -- A decrease on a counter not seen is written too (as 0): the row may have appeared meanwhile. So is a hold's:
    -- the next writer must find the counter to lock.
    SELECT org, metric, period, used, alerted, low FROM final
    WHERE NOT existed AND (used > 0 OR touched OR EXISTS (SELECT 1 FROM unnest(amounts) a WHERE a < 0))
  ),
  created AS (
    INSERT INTO usage_counters (organisation_id, metric, period_start, used, alerted_threshold, credits_low)
    SELECT org, metric, period, used, alerted, low FROM creating ORDER BY org, metric, period
    ON CONFLICT DO NOTHING
    RETURNING organisation_id AS org, metric, period_start AS period
  ),
  outcome AS (
    SELECT f.ns[f.k] AS n, f.org, f.metric, COALESCE(f.kinds[f.k], 'report') AS kind, f.amounts[f.k] AS amount, f.before, f.used, f.lim,
           f.policy, f.ok AS accepted, f.room AS available, f.balance - f.drawn AS balance, f.draw, f.own,
           f.period, f.alerted_from, f.alerted, f.warned, f.thr,
           NOT f.existed AND (f.org, f.metric, f.period) IN (SELECT org, metric, period FROM creating)
                         AND (f.org, f.metric, f.period) NOT IN (SELECT org, metric, period FROM created) AS retry
    FROM fold f WHERE f.k > 0
  ),
  applied AS (
    SELECT o.*, e.key, e.res, e.hold_id, now() + make_interval(secs => e.ttl) AS expires_at,
           o.org AS organisation_id, o.lim AS "limit"
    FROM outcome o JOIN ev e USING (n) WHERE o.accepted AND NOT o.retry
  ),
  consumed AS (
    -- The reports that drew on grants, to credits' consumption (in event order: each takes its range of the draw).
    SELECT credits.consume(array_agg(a.org ORDER BY a.n), array_agg(a.metric ORDER BY a.n), array_agg(a.draw ORDER BY a.n),
                           array_agg(CASE WHEN a.kind = 'commit' THEN a.res::text ELSE a.key END ORDER BY a.n)) AS entries
    FROM applied a WHERE a.draw > 0
    HAVING count(*) > 0
  )${keyed ? `,
${KEY_CTES_SQL}` : ''}`;

/**
 * An accepted report or commit that left a credits metric's `available` below its enabled automatic top-up's
 * threshold (spec §16.4; the threshold read by credits.recharge_threshold, as the low-credits alert reads it): one
 * primary-key lookup, for credits metrics only; the purchase itself is credits', after
 * the commit (UsageCommits).
 */
const RECHARGE_DUE = `(o.accepted AND NOT o.retry AND o.kind <> 'hold' AND o.policy = 'credits'
                      AND EXISTS (SELECT 1 FROM credits.recharge_threshold(o.org, o.metric) t WHERE o.available < t.threshold))`;

const applySqlAnswer = (keyed: boolean, handedOn: string) => `,
  answered AS (
  SELECT e.n,
         CASE ${keyed ? `WHEN p.n IS NOT NULL THEN (CASE WHEN NOT p.same THEN 409 WHEN p.response IS NULL THEN 0 WHEN e.kind = 'hold' THEN 201 ELSE 200 END)
              WHEN x.code IS NOT NULL THEN (CASE x.code WHEN 'reservation_not_found' THEN 404 WHEN 'reservation_exceeded' THEN 400
                                                        WHEN 'committed' THEN 200 ELSE 409 END)` : ''}
              WHEN o.n IS NULL THEN 404
              WHEN o.retry THEN 0
              WHEN o.accepted THEN (CASE WHEN e.kind = 'hold' THEN 201 ELSE 200 END)
              ELSE 402 END AS status,
         CASE ${keyed ? `WHEN p.n IS NOT NULL THEN (CASE WHEN p.same THEN NULL ELSE 'idempotency_key_reused' END)
              WHEN x.code IS NOT NULL THEN NULLIF(x.code, 'committed')` : ''}
              WHEN o.n IS NULL THEN 'organisation_not_found'
              WHEN o.retry OR o.accepted THEN NULL
              WHEN o.policy = 'credits' THEN 'insufficient_credits'
              ELSE 'limit_exceeded' END AS code,
         o.metric, o.used, o.lim AS "limit", o.policy, o.available, o.balance, o.kind = 'commit' AND o.own = 0 AS expired,
         o.org AS "organisationId", ${RECHARGE_DUE} AS "rechargeDue",
         a.hold_id AS "holdId", a.expires_at AS "expiresAt",
         ${keyed ? `COALESCE(p.response, CASE WHEN x.code = 'committed' THEN e.res_response END)` : 'NULL::jsonb'} AS response,
         COALESCE((SELECT entries FROM consumed), 0) AS consumed,
         ${keyed ? 'COALESCE((SELECT holds FROM held), 0) AS held,' : ''}
         ${handedOn}
  FROM ev e ${keyed ? 'LEFT JOIN prior p USING (n) LEFT JOIN early x USING (n)' : ''} LEFT JOIN outcome o USING (n) LEFT JOIN applied a USING (n)
  )
  -- All or nothing: an event to run again (status 0), a key taken or a reservation settled by a concurrent writer
  -- after this statement looked, fails the whole statement (serialization_failure), which rolls back what it wrote.
  SELECT * FROM answered
  WHERE (SELECT licensing.usage_uncontended(EXISTS (SELECT 1 FROM answered WHERE status = 0)${
    keyed
      ? `
               OR (SELECT count(*) FROM keying) > (SELECT count(*) FROM keyed)
               OR COALESCE((SELECT commits FROM settled), 0) < (SELECT count(*) FROM applied WHERE kind = 'commit')`
      : ''
  }))
  ORDER BY n`;

/**
 * What the statement hands on of its applied events to notifications and billing, each through that module's
 * function (one round trip still): with NOTIFY_URLS, the events that moved a metric across its limit in force
 * (`usage.capacity` messages); with a provider meter configured, the accepted usage to billing's meter windows
 * (spec §13). Each is called once, and only with events to hand on. Holds move no usage: neither sees them.
 */
const capacitySql = (urls: string) => `
  capacity AS (
    SELECT notifications.capacity_crossed(array_agg(a.organisation_id ORDER BY a.n), array_agg(a.metric ORDER BY a.n),
                                          array_agg(a.used ORDER BY a.n), array_agg(a."limit" ORDER BY a.n), ${urls}::text[]) AS queued
    FROM applied a WHERE a.kind <> 'hold' AND (a.used >= a."limit") <> (a.before >= a."limit")
    HAVING count(*) > 0
  )`;
/**
 * Spend alerts (spec §16.4), to notifications.notices, in event order: `usage.threshold` for each threshold an event
 * took its counter's level past (the counter's row lock makes it once per organisation, metric, threshold and
 * period), then `credits.low` for an event that left a credits metric's `available` below its low threshold (the
 * automatic top-up's threshold, else CREDITS_LOW_THRESHOLD_PCT of the included limit) when it was not there after
 * the counter's last event (or at its period's start).
 */
const alertsSql = (urls: string, thresholds: number[]) => `
  alerts AS (
    SELECT notifications.notices(array_agg(x.org ORDER BY x.n, x.rank), array_agg(x.type ORDER BY x.n, x.rank),
                                 array_agg(x.data ORDER BY x.n, x.rank), ${urls}::text[]) AS queued
    FROM (SELECT a.n, t.t AS rank, a.organisation_id AS org, 'usage.threshold' AS type,
                 json_build_object('metric', a.metric, 'threshold', t.t, 'used', a.used, 'limit', a.lim, 'period_start', a.period) AS data
          FROM applied a CROSS JOIN unnest('{${thresholds.join(',')}}'::int[]) t(t)
          WHERE a.alerted > a.alerted_from AND t.t > a.alerted_from AND t.t <= a.alerted
          UNION ALL
          SELECT a.n, 100000, a.organisation_id, 'credits.low', json_build_object('metric', a.metric, 'available', a.available, 'threshold', a.thr)
          FROM applied a WHERE a.warned) x
    HAVING count(*) > 0
  )`;
const meteredSql = (metrics: string[], flushS: number) => `
  metered AS (
    SELECT billing.meter_usage(array_agg(a.organisation_id ORDER BY a.n), array_agg(a.metric ORDER BY a.n),
                               array_agg(a.amount ORDER BY a.n), ARRAY[${metrics.map((m) => `'${m}'`).join(', ')}]::text[], ${flushS}) AS windows
    FROM applied a WHERE a.kind <> 'hold'
    HAVING count(*) > 0
  )`;

const applySql = (
  license: (organisation: string) => string,
  tiers: string,
  graceS: number,
  keyed: boolean,
  handOn: { capacity: boolean; meters?: { metrics: string[]; flushS: number } },
  alerts: SpendAlerts,
) => {
  const ctes = [
    handOn.capacity ? capacitySql(paramsOf(keyed).urls) : '',
    handOn.capacity ? alertsSql(paramsOf(keyed).urls, alerts.thresholds) : '',
    handOn.meters ? meteredSql(handOn.meters.metrics, handOn.meters.flushS) : '',
  ].filter(Boolean);
  const columns = [
    handOn.capacity ? 'COALESCE((SELECT queued FROM capacity), 0) + COALESCE((SELECT queued FROM alerts), 0) AS queued' : '0 AS queued',
    ...(handOn.meters ? ['COALESCE((SELECT windows FROM metered), 0) AS metered'] : []),
  ];
  const urls = handOn.capacity ? `${paramsOf(keyed).urls}::text[]` : `'{}'::text[]`;
  const rollOver = (organisation: string) => `credits.roll_over(${organisation}, ${tiers}, ${graceS}, ${urls})`;
  return `${applySqlHead(license, tiers, keyed, rollOver, alerts)}${ctes.map((cte) => `, ${cte}`).join('')}
   ${applySqlAnswer(keyed, columns.join(', '))}`;
};

/**
 * The check (spec §7, §13, §16): the used amount of the metric, its limit in force, and whether `amount` more
 * would be accepted now, by the room a report would have (live holds and, for a credits metric, the balance
 * counted). No row: not readable by the caller (identity.access).
 */
const CHECK = namedParams('organisation', 'user', 'metric', 'amount');
const { organisation: $org, metric: $metric, amount: $amount } = CHECK.ref;
/** The check's statement, with the tier table and grace period as constants (licenseConstants). */
const checkSql = (tiers: string, graceS: number) => `
  WITH r AS (
    SELECT CASE WHEN ${$metric}::text = 'users' THEN (SELECT count(*) FROM identity.members(${$org}::uuid))
                ELSE COALESCE((SELECT used FROM usage_counters
                               WHERE organisation_id = ${$org}::uuid AND metric = ${$metric}::text
                                 AND period_start = licensing.counter_period(${tiers}, ${$metric}::text, s.ai_period)), 0) END AS used,
           (s.limits ->> ${$metric}::text)::bigint AS lim,
           ${policyOf('s.overage', `${$metric}::text`)} AS policy,
           (SELECT COALESCE(sum(h.amount), 0) FROM credits.live_holds(${$org}::uuid, ${$metric}::text) h) AS held,
           (SELECT COALESCE(sum(g.remaining), 0) FROM credits.counting_grants(${$org}::uuid) g WHERE g.metric = ${$metric}::text) AS balance
    FROM licensing.license_state(${$org}::uuid, ${tiers}, ${graceS}) s
    CROSS JOIN identity.access(${$org}::uuid, ${CHECK.ref.user}::uuid, NULL) a
    WHERE a.allowed
  )
  SELECT used, lim AS "limit", COALESCE(${accepts(`${$amount}::bigint`, roomOf('policy', 'lim', 'used', 'balance', 'held'))}, false) AS allowed FROM r`;

/** What licensing.usage_uncontended fails the usage statement with. */
const SERIALIZATION_FAILURE = '40001';

/** A report back-ends send (spec §7). */
export interface UsageEvent {
  organisationId: string;
  /** A metric back-ends report: projects, ai_tokens or a further metric of the tier table (see checkEvent). */
  metric: string;
  amount: number;
  idempotencyKey?: string;
}

/**
 * What the usage statement applies: a report, a hold (`holdTtlS`: a reservation of `amount`, spec §16.5), or a
 * commit (`reservation`: its organisation and metric are the reservation's, made once per reservation; with
 * `organisationId`, a reservation of another organisation is unknown).
 */
export type StatementEvent = UsageEvent | (UsageEvent & { holdTtlS: number }) | { reservation: string; amount: number; organisationId?: string };

/** What the usage statement answered for one event (see applySqlHead). */
export interface AppliedRow {
  /** 200 (201: a hold), 400, 402, 404 or 409. */
  status: number;
  /** The error's code, for a status other than 200 and 201. */
  code: string | null;
  metric: string | null;
  used: number | null;
  limit: number | null;
  policy: Overage | null;
  /** For a credits metric: what it may still take (included left + balance − reserved), and the balance. */
  available: number | null;
  balance: number | null;
  /** A commit whose hold had lapsed (or was never live): an ordinary report. */
  expired: boolean | null;
  holdId: string | null;
  expiresAt: Date | null;
  /** A key's first answer (status 200 or 201 for a repeat), or a commit's, stored with its reservation. */
  response: UsageAnswer | ReservationAnswer | null;
  /** The event's organisation (null when it was not applied: a repeated key, an unknown reservation). */
  organisationId: string | null;
  /** Applied, and left `available` below the metric's automatic top-up threshold (spec §16.4). */
  rechargeDue: boolean | null;
}

/** The answer of a single report (spec §7, §13, §16.2), as stored with its idempotency key. */
export interface UsageAnswer {
  metric: string;
  used: number;
  limit: number;
  at_capacity: boolean;
  overage?: number;
  balance?: number;
  available?: number;
  /** A reservation's commit after its hold had lapsed (spec §16.5). */
  expired?: true;
}

/** A reservation (spec §16.5). */
export interface ReservationAnswer {
  id: string;
  organisation_id: string;
  metric: string;
  amount: number;
  expires_at: string;
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
  /** The usage statement for events with a key, a hold or a commit among them, and for plain reports without keys. */
  private readonly applySql: { keyed: string; keyless: string };
  private readonly checkSql: string;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {
    this.notifying = config.notifyUrls.length > 0;
    // The tier table and the grace period are fixed for the process: written into the statements as constants.
    const { tiers, graceS } = licenseConstants(config);
    const license = (organisation: string) => `licensing.license_state(${organisation}, ${tiers}, ${graceS}) s`;
    const metrics = Object.keys(config.providerMeters);
    const handOn = { capacity: this.notifying, meters: metrics.length ? { metrics, flushS: config.meterFlushS } : undefined };
    const alerts = { thresholds: config.usageAlertThresholds, lowPct: config.creditsLowThresholdPct };
    this.applySql = {
      keyed: applySql(license, tiers, graceS, true, handOn, alerts),
      keyless: applySql(license, tiers, graceS, false, handOn, alerts),
    };
    this.checkSql = checkSql(tiers, graceS);
  }

  /**
   * Applies the events in order (no two with the same organisation and key), all or none: one row per event, or
   * throws UsageContended when a concurrent writer got in first (nothing applied: run it again).
   */
  async apply(m: EntityManager, events: StatementEvent[]): Promise<AppliedRow[]> {
    const field = <K extends string>(e: StatementEvent, key: K) => (key in e ? (e as Record<K, unknown>)[key] : undefined) ?? null;
    const keyed = events.some((e) => field(e, 'idempotencyKey') !== null || 'reservation' in e || 'holdTtlS' in e);
    const arrays = {
      organisations: events.map((e) => field(e, 'organisationId')),
      metrics: events.map((e) => field(e, 'metric')),
      amounts: events.map((e) => e.amount),
      urls: this.config.notifyUrls,
    };
    const values = keyed
      ? KEYED.values({
          ...arrays,
          keys: events.map((e) => field(e, 'idempotencyKey')),
          reservations: events.map((e) => field(e, 'reservation')),
          ttls: events.map((e) => field(e, 'holdTtlS')),
        })
      : KEYLESS.values(arrays);
    try {
      // The URLs (the last parameter) only when notifying.
      return await preparedQuery<AppliedRow>(m, keyed ? this.applySql.keyed : this.applySql.keyless, this.notifying ? values : values.slice(0, -1));
    } catch (err) {
      throw (err as { code?: unknown }).code === SERIALIZATION_FAILURE ? new UsageContended() : err;
    }
  }

  /** Undefined when the caller may not read the organisation (see LicensingRepository.status). */
  async check(organisationId: string, userId: string | null, metric: string, amount: number): Promise<CheckRow | undefined> {
    const values = CHECK.values({ organisation: organisationId, user: userId, metric, amount });
    const [row] = await preparedQuery<CheckRow>(this.db, this.checkSql, values);
    return row;
  }
}
