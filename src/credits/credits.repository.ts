import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { licenseArguments } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { CreditGrant, GrantCategory, GrantSource } from './credit-grant.entity';
import { LedgerKind } from './credit-ledger-entry.entity';
import { RechargeStatus } from './credit-recharge.entity';
import { ReservationStatus } from './usage-reservation.entity';

/** A grant as stored, with whether it is past its expiry now (the database's clock). */
export type GrantRow = Pick<
  CreditGrant,
  'id' | 'organisationId' | 'metric' | 'amount' | 'remaining' | 'category' | 'priority' | 'source' | 'reference' | 'effectiveAt' | 'expiresAt' | 'voidedAt' | 'note' | 'request' | 'createdAt'
> & { expired: boolean };

const GRANT_COLUMNS = `
  g.id, g.organisation_id AS "organisationId", g.metric, g.amount, g.remaining, g.category,
  g.priority, g.source, g.reference, g.effective_at AS "effectiveAt", g.expires_at AS "expiresAt", g.voided_at AS "voidedAt",
  g.note, g.request, g.created_at AS "createdAt", COALESCE(g.expires_at <= now(), false) AS expired`;

/** What credits.grant is given (see CreditsService.grant for the rules). */
export interface GrantValues {
  organisationId: string;
  metric: string;
  amount: number;
  category: GrantCategory;
  source: GrantSource;
  reference: string;
  priority: number | null;
  effectiveAt: Date | null;
  expiresAt: Date | null;
  note: string | null;
  request: Record<string, unknown> | null;
  ledgerReference: string | null;
}

export interface AutoRechargeRow {
  metric: string;
  pack: string;
  threshold: number;
  monthlyLimit: number;
  enabled: boolean;
  lastError: string | null;
  rechargesThisMonth: number;
}

export interface RechargeRow {
  id: string;
  organisationId: string;
  metric: string;
  pack: string;
  status: RechargeStatus;
  invoiceId: string | null;
}

/** Recharges created in the calendar month (UTC) that did not fail: what the monthly limit counts. */
const RECHARGES_THIS_MONTH = (setting: string) => `
  (SELECT count(*)::int FROM credit_recharges r
   WHERE r.organisation_id = ${setting}.organisation_id AND r.metric = ${setting}.metric AND r.status <> 'failed'
     AND r.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;

const AUTO_RECHARGE_COLUMNS = `
  a.metric, a.pack, a.threshold, a.monthly_limit AS "monthlyLimit", a.enabled, a.last_error AS "lastError",
  ${RECHARGES_THIS_MONTH('a')} AS "rechargesThisMonth"`;

const RECHARGE_COLUMNS = `r.id, r.organisation_id AS "organisationId", r.metric, r.pack, r.status, r.invoice_id AS "invoiceId"`;

/** A grant that counts, as the credits read has it (credits.counting_grants: not voided, not expired). */
export type CountingGrantRow = Pick<GrantRow, 'id' | 'metric' | 'amount' | 'remaining' | 'category' | 'priority' | 'source' | 'effectiveAt' | 'expiresAt' | 'note' | 'createdAt'>;

/** One credits metric of the credits read (spec §16.2). */
export interface CreditMetricRow {
  metric: string;
  limit: number;
  used: number;
  reserved: number;
  /** In the order they are drawn on. */
  grants: CountingGrantRow[];
  autoRecharge: AutoRechargeRow | null;
}

/** The credits read: the caller's access (as the entitlements read's) and every credits metric in force. */
export interface CreditsReadRow {
  authenticated: boolean;
  allowed: boolean;
  metrics: CreditMetricRow[];
}

/** A reservation as its release needs it. */
export interface ReservationRow {
  organisationId: string;
  metric: string;
  amount: number;
  status: ReservationStatus;
  /** Held and not past its expiry: its hold counts. */
  live: boolean;
}

export interface LedgerRow {
  id: string;
  at: Date;
  metric: string;
  kind: LedgerKind;
  amount: number;
  grantId: string | null;
  balanceAfter: number;
  reference: string | null;
}

/**
 * The credits read (spec §16.2) in one round trip, for every kind of caller (as the entitlements read: a session
 * token verified here, a verified user, or a service key with both NULL): the license in force, and for each of
 * `metrics` (the per-period metrics, in table order) whose policy in force is credits, its included amount, its
 * holds, its grants that count in their draw order and its automatic top-up.
 */
const READ = namedParams('organisation', 'tiers', 'graceS', 'user', 'tokenHash', 'metrics');
const { organisation: $org, tiers: $tiers } = READ.ref;
const READ_SQL = `
  SELECT json_build_object(
    'authenticated', a.authenticated, 'allowed', a.allowed,
    'metrics', CASE WHEN a.allowed THEN COALESCE((
      SELECT json_agg(json_build_object(
               'metric', m.metric, 'limit', (s.limits ->> m.metric)::bigint,
               'used', COALESCE((SELECT u.used FROM licensing.period_usage(${$org}::uuid, ${$tiers}::jsonb, s.ai_period) u WHERE u.metric = m.metric), 0),
               'reserved', (SELECT COALESCE(sum(h.amount), 0) FROM credits.live_holds(${$org}::uuid, m.metric) h),
               'grants', COALESCE((SELECT json_agg(json_build_object('id', g.id, 'metric', g.metric, 'amount', g.amount, 'remaining', g.remaining,
                                                                     'category', g.category, 'priority', g.priority, 'source', g.source,
                                                                     'effectiveAt', g.effective_at, 'expiresAt', g.expires_at, 'note', g.note,
                                                                     'createdAt', g.created_at) ORDER BY g.draw_order)
                                   FROM credits.counting_grants(${$org}::uuid) g WHERE g.metric = m.metric), '[]'),
               'autoRecharge', (SELECT row_to_json(r) FROM (SELECT ${AUTO_RECHARGE_COLUMNS} FROM credit_auto_recharges a
                                                            WHERE a.organisation_id = ${$org}::uuid AND a.metric = m.metric) r))
             ORDER BY m.n)
      FROM unnest(${READ.ref.metrics}::text[]) WITH ORDINALITY AS m(metric, n)
      WHERE s.overage ->> m.metric = 'credits'), '[]') END) AS credits
  FROM licensing.license_state(${$org}::uuid, ${$tiers}::jsonb, ${READ.ref.graceS}::bigint) s
  CROSS JOIN identity.access(${$org}::uuid, ${READ.ref.user}::uuid, ${READ.ref.tokenHash}::bytea) a`;

/**
 * The ledger read (spec §16.2), newest first, with the caller's access: a page of `lim` entries of the organisation
 * (of one metric, or all), older than the entry `after` when given.
 */
const LEDGER = namedParams('organisation', 'user', 'tokenHash', 'metric', 'after', 'lim');
const LEDGER_SQL = `
  SELECT a.authenticated, a.allowed,
         CASE WHEN a.allowed THEN COALESCE((
           SELECT json_agg(json_build_object('id', e.id::text, 'at', e.at, 'metric', e.metric, 'kind', e.kind, 'amount', e.amount,
                                             'grantId', e.grant_id, 'balanceAfter', e.balance_after, 'reference', e.reference) ORDER BY e.id DESC)
           FROM (SELECT l.* FROM credit_ledger l
                 WHERE l.organisation_id = ${LEDGER.ref.organisation}::uuid
                   AND (${LEDGER.ref.metric}::text IS NULL OR l.metric = ${LEDGER.ref.metric}::text)
                   AND (${LEDGER.ref.after}::bigint IS NULL OR l.id < ${LEDGER.ref.after}::bigint)
                 ORDER BY l.id DESC LIMIT ${LEDGER.ref.lim}::int) e), '[]') END AS entries
  FROM identity.access(${LEDGER.ref.organisation}::uuid, ${LEDGER.ref.user}::uuid, ${LEDGER.ref.tokenHash}::bytea) a`;

/** Who reads: a session token to verify (its SHA-256), a verified user, or neither (a service key). */
export interface ReadCaller {
  userId?: string;
  sessionTokenHash?: Buffer;
}

/** The credit tables (grants, ledger, automatic top-ups and their purchases): every statement on them. */
@Injectable()
export class CreditsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** The credits read of `metrics` (per-period metrics in table order; those whose policy in force is credits answer). */
  async read(organisationId: string, caller: ReadCaller, metrics: readonly string[]): Promise<CreditsReadRow> {
    const values = READ.values({
      organisation: organisationId,
      ...licenseArguments(this.config),
      user: caller.userId ?? null,
      tokenHash: caller.sessionTokenHash ?? null,
      metrics,
    });
    const [row] = await preparedQuery<{ credits: CreditsReadRow }>(this.db, READ_SQL, values);
    return row.credits;
  }

  /** A page of the ledger, newest first (`limit` entries), with the caller's access. */
  async ledger(
    organisationId: string,
    caller: ReadCaller,
    page: { metric: string | null; startingAfter: string | null; limit: number },
  ): Promise<{ authenticated: boolean; allowed: boolean; entries: LedgerRow[] | null }> {
    const values = LEDGER.values({
      organisation: organisationId,
      user: caller.userId ?? null,
      tokenHash: caller.sessionTokenHash ?? null,
      metric: page.metric,
      after: page.startingAfter,
      lim: page.limit,
    });
    const [row] = await preparedQuery<{ authenticated: boolean; allowed: boolean; entries: LedgerRow[] | null }>(this.db, LEDGER_SQL, values);
    return row;
  }

  /** Whether the organisation exists (identity.organisation), in the caller's transaction. */
  async organisationExists(m: EntityManager, organisationId: string): Promise<boolean> {
    const [row] = await m.query(`SELECT EXISTS (SELECT 1 FROM identity.organisation($1)) AS found`, [organisationId]);
    return row.found;
  }

  /** The grant made for (organisation, source, reference), if any. */
  async findGrantByReference(m: EntityManager, organisationId: string, source: GrantSource, reference: string): Promise<GrantRow | undefined> {
    const [row] = await m.query(`SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.organisation_id = $1 AND g.source = $2 AND g.reference = $3`, [
      organisationId,
      source,
      reference,
    ]);
    return row;
  }

  /**
   * The grant, locked for the rest of the transaction (after any usage write drawing on it commits: its latest
   * `remaining`); undefined when the organisation has none of that id.
   */
  async lockGrant(m: EntityManager, organisationId: string, grantId: string): Promise<GrantRow | undefined> {
    const [row] = await m.query(`SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.organisation_id = $1 AND g.id = $2 FOR UPDATE`, [
      organisationId,
      grantId,
    ]);
    return row;
  }

  /**
   * Voids a grant locked by lockGrant: `remaining` 0, `voided_at` now, and a ledger entry for what was left (`void`;
   * `expire` when it was already past its expiry, which the minutely job had not written yet), with the metric's
   * balance after it. Answers the grant as it is now.
   */
  async voidGrant(m: EntityManager, grant: GrantRow, reference: string): Promise<GrantRow> {
    const [row] = await m.query(
      `WITH v AS (
         UPDATE credit_grants g SET remaining = 0, voided_at = now() WHERE g.id = $1 AND g.voided_at IS NULL RETURNING g.*),
       entry AS (
         INSERT INTO credit_ledger (organisation_id, metric, kind, amount, grant_id, balance_after, reference)
         SELECT v.organisation_id, v.metric, CASE WHEN v.expires_at <= now() THEN 'expire' ELSE 'void' END, -$2::bigint, v.id,
                (SELECT COALESCE(sum(c.remaining), 0) FROM credits.counting_grants(v.organisation_id) c WHERE c.metric = v.metric AND c.id <> v.id),
                $3
         FROM v WHERE $2::bigint > 0)
       SELECT ${GRANT_COLUMNS} FROM v g`,
      [grant.id, grant.remaining, reference],
    );
    return row;
  }

  /** credits.grant: the grant once per (organisation, source, reference), its ledger entry and its notification. */
  async grant(m: EntityManager, g: GrantValues, urls: readonly string[]): Promise<{ grantId: string; created: boolean }> {
    const [row] = await m.query(
      `SELECT grant_id AS "grantId", created FROM credits.grant($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        g.organisationId,
        g.metric,
        g.amount,
        g.category,
        g.source,
        g.reference,
        g.priority,
        g.effectiveAt,
        g.expiresAt,
        g.note,
        g.request === null ? null : JSON.stringify(g.request),
        g.ledgerReference,
        urls,
      ],
    );
    return row;
  }

  /** A reservation (spec §16.5), locked for the rest of the transaction; `live` while its hold counts. */
  async lockReservation(m: EntityManager, reservationId: string): Promise<ReservationRow | undefined> {
    const [row] = await m.query(
      `SELECT r.organisation_id AS "organisationId", r.metric, r.amount, r.status, r.status = 'held' AND r.expires_at > now() AS live
       FROM usage_reservations r WHERE r.id = $1 FOR UPDATE`,
      [reservationId],
    );
    return row;
  }

  /**
   * Releases a reservation locked by lockReservation (held or lapsed): `released`, and, when its hold was live on a
   * metric whose policy in force is credits, a `release` ledger entry for what it gave back (no grant moves: the
   * balance after it is the metric's balance), as a commit writes for the rest of its hold.
   */
  async releaseReservation(m: EntityManager, reservationId: string, r: ReservationRow): Promise<void> {
    await m.query(`UPDATE usage_reservations SET status = 'released', settled_at = now() WHERE id = $1`, [reservationId]);
    if (!r.live) return;
    const { tiers, graceS } = licenseArguments(this.config);
    await m.query(
      `INSERT INTO credit_ledger (organisation_id, metric, kind, amount, balance_after, reference)
       SELECT $2, $3, 'release', $4,
              (SELECT COALESCE(sum(c.remaining), 0) FROM credits.counting_grants($2::uuid) c WHERE c.metric = $3::text), $1::text
       FROM licensing.license_state($2::uuid, $5::jsonb, $6::bigint) s
       WHERE s.overage ->> $3::text = 'credits'`,
      [reservationId, r.organisationId, r.metric, r.amount, tiers, graceS],
    );
  }

  /**
   * The minutely job's write-off (spec §16.1): up to `limit` grants past their expiry with something left get
   * `remaining` 0 and an `expire` entry for it (the balance after it: the metric's grants that count, which never
   * included them). Rows another writer holds are left for the next minute; a grant written off by a concurrent run
   * no longer matches once its lock is taken, so each is written off once. Reservations past their expiry are marked
   * `expired` (they stopped counting at their expiry already). Answers how many grants were written off.
   */
  async expireGrants(limit: number): Promise<number> {
    const [row] = await this.db.query(
      `WITH due AS (
         SELECT g.id, g.organisation_id, g.metric, g.remaining FROM credit_grants g
         WHERE NOT g.exhausted AND g.expires_at <= now() AND g.voided_at IS NULL
         ORDER BY g.expires_at, g.id LIMIT $1 FOR UPDATE SKIP LOCKED),
       written AS (
         UPDATE credit_grants g SET remaining = 0 FROM due WHERE g.id = due.id RETURNING g.id),
       entries AS (
         INSERT INTO credit_ledger (organisation_id, metric, kind, amount, grant_id, balance_after, reference)
         SELECT d.organisation_id, d.metric, 'expire', -d.remaining, d.id,
                (SELECT COALESCE(sum(c.remaining), 0) FROM credits.counting_grants(d.organisation_id) c WHERE c.metric = d.metric), NULL
         FROM due d ORDER BY d.organisation_id, d.metric, d.id
         RETURNING 1),
       lapsed AS (
         UPDATE usage_reservations r SET status = 'expired'
         WHERE r.id IN (SELECT x.id FROM usage_reservations x WHERE x.status = 'held' AND x.expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT (SELECT count(*) FROM written)::int AS expired, (SELECT count(*) FROM entries)::int AS entries, (SELECT count(*) FROM lapsed)::int AS lapsed`,
      [limit],
    );
    return row.expired;
  }

  /**
   * An organisation's grants brought to a clock ahead of real time (the sandbox's test clock, sandbox:advance):
   * those whose start it has passed take effect now (a rollover grant of the period the clock is in starts at that
   * period's start), and those whose expiry it has passed are written off as the minutely job writes off an expired
   * grant (`remaining` 0, an `expire` entry; its reference `sandbox_clock`, the balance after all of them). In the
   * caller's transaction; answers how many grants each step changed.
   */
  async bringToClock(m: EntityManager, organisationId: string, clock: Date): Promise<{ madeEffective: number; expired: number }> {
    const [effective] = await m.query(
      `WITH started AS (
         UPDATE credit_grants g SET effective_at = now()
         WHERE g.organisation_id = $1 AND g.voided_at IS NULL AND g.effective_at > now() AND g.effective_at <= $2
         RETURNING 1)
       SELECT count(*)::int AS n FROM started`,
      [organisationId, clock],
    );
    const [row] = await m.query(
      `WITH due AS (
         SELECT g.id, g.metric, g.remaining FROM credit_grants g
         WHERE g.organisation_id = $1 AND NOT g.exhausted AND g.voided_at IS NULL AND g.expires_at <= $2
         ORDER BY g.id FOR UPDATE),
       written AS (
         UPDATE credit_grants g SET remaining = 0 FROM due WHERE g.id = due.id RETURNING g.id),
       entries AS (
         INSERT INTO credit_ledger (organisation_id, metric, kind, amount, grant_id, balance_after, reference)
         SELECT $1, d.metric, 'expire', -d.remaining, d.id,
                (SELECT COALESCE(sum(c.remaining), 0) FROM credits.counting_grants($1::uuid) c
                 WHERE c.metric = d.metric AND c.id NOT IN (SELECT due.id FROM due)),
                'sandbox_clock'
         FROM due d ORDER BY d.metric, d.id
         RETURNING 1)
       SELECT (SELECT count(*) FROM written)::int AS expired, (SELECT count(*) FROM entries)::int AS entries`,
      [organisationId, clock],
    );
    return { madeEffective: effective.n, expired: row.expired };
  }

  /**
   * Organisations that may have a rollover to make (spec §16.1): those with a counter of one of `metrics` (the
   * metrics some tier rolls over) in a billing period of the last 400 days, after `after` in id order, `limit` of them.
   */
  async rolloverCandidates(metrics: readonly string[], after: string | null, limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `SELECT DISTINCT c.organisation_id AS id FROM usage_counters c
       WHERE c.metric = ANY ($1::text[]) AND c.period_start > 0 AND c.updated_at > now() - interval '400 days'
         AND ($2::uuid IS NULL OR c.organisation_id > $2::uuid)
       ORDER BY 1 LIMIT $3`,
      [metrics, after, limit],
    );
    return rows.map((r) => r.id);
  }

  /** credits.roll_over: the organisation's rollover grants of its current period, each once; how many it made. */
  async rollOver(organisationId: string, urls: readonly string[]): Promise<number> {
    const { tiers, graceS } = licenseArguments(this.config);
    const [row] = await this.db.query(`SELECT credits.roll_over($1::uuid, $2::jsonb, $3::bigint, $4::text[]) AS made`, [organisationId, tiers, graceS, urls]);
    return row.made;
  }

  async findGrant(m: EntityManager, organisationId: string, grantId: string): Promise<GrantRow | undefined> {
    const [row] = await m.query(`SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.organisation_id = $1 AND g.id = $2`, [organisationId, grantId]);
    return row;
  }

  async autoRecharge(m: EntityManager, organisationId: string, metric: string): Promise<AutoRechargeRow | undefined> {
    const [row] = await m.query(`SELECT ${AUTO_RECHARGE_COLUMNS} FROM credit_auto_recharges a WHERE a.organisation_id = $1 AND a.metric = $2`, [
      organisationId,
      metric,
    ]);
    return row;
  }

  /** Saves the setting, enabled and without an error (a declined one is turned on again by saving it). */
  async saveAutoRecharge(
    m: EntityManager,
    s: { organisationId: string; metric: string; pack: string; threshold: number; monthlyLimit: number },
  ): Promise<AutoRechargeRow> {
    const [row] = await m.query(
      `WITH a AS (
         INSERT INTO credit_auto_recharges AS a (organisation_id, metric, pack, threshold, monthly_limit, enabled, last_error, updated_at)
         VALUES ($1, $2, $3, $4, $5, true, NULL, now())
         ON CONFLICT (organisation_id, metric) DO UPDATE
           SET pack = EXCLUDED.pack, threshold = EXCLUDED.threshold, monthly_limit = EXCLUDED.monthly_limit, enabled = true,
               last_error = NULL, updated_at = now()
         RETURNING a.*)
       SELECT ${AUTO_RECHARGE_COLUMNS} FROM a`,
      [s.organisationId, s.metric, s.pack, s.threshold, s.monthlyLimit],
    );
    return row;
  }

  async deleteAutoRecharge(m: EntityManager, organisationId: string, metric: string): Promise<boolean> {
    const [, count] = await m.query(`DELETE FROM credit_auto_recharges WHERE organisation_id = $1 AND metric = $2`, [organisationId, metric]);
    return count > 0;
  }

  async disableAutoRecharge(m: EntityManager, organisationId: string, metric: string, error: string): Promise<AutoRechargeRow | undefined> {
    const [row] = await m.query(
      `WITH a AS (
         UPDATE credit_auto_recharges a SET enabled = false, last_error = $3, updated_at = now()
         WHERE a.organisation_id = $1 AND a.metric = $2 RETURNING a.*)
       SELECT ${AUTO_RECHARGE_COLUMNS} FROM a`,
      [organisationId, metric, error],
    );
    return row;
  }

  /**
   * The automatic top-ups the reports made due (spec §16.4), after their commit, in one statement: for each
   * organisation and metric whose setting is enabled and under its monthly limit, a pending recharge (none when one
   * is in flight: the partial unique index) with its job on the queue (`task`, keyed by the recharge, tried at most
   * `maxAttempts` times). Answers the recharges made.
   */
  async startRecharges(due: { organisationId: string; metric: string }[], task: string, maxAttempts: number): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `WITH made AS (
         INSERT INTO credit_recharges (organisation_id, metric, pack)
         SELECT a.organisation_id, a.metric, a.pack
         FROM credit_auto_recharges a
         JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[]) AS d(org, metric)) d ON a.organisation_id = d.org AND a.metric = d.metric
         WHERE a.enabled AND ${RECHARGES_THIS_MONTH('a')} < a.monthly_limit
         ON CONFLICT (organisation_id, metric) WHERE status = 'pending' DO NOTHING
         RETURNING id)
       SELECT made.id FROM made,
         LATERAL graphile_worker.add_job($3::text, json_build_object('recharge_id', made.id), job_key => $3::text || ':' || made.id,
                                         max_attempts => $4::int) j`,
      [due.map((d) => d.organisationId), due.map((d) => d.metric), task, maxAttempts],
    );
    return rows.map((r) => r.id);
  }

  /** The recharge as it is now; undefined when there is none. */
  async findRecharge(m: EntityManager, rechargeId: string): Promise<RechargeRow | undefined> {
    const [row] = await m.query(`SELECT ${RECHARGE_COLUMNS} FROM credit_recharges r WHERE r.id = $1`, [rechargeId]);
    return row;
  }

  /** The invoice a pending recharge's purchase made (kept while its payment is under way). */
  async setRechargeInvoice(m: EntityManager, rechargeId: string, invoiceId: string): Promise<void> {
    await m.query(`UPDATE credit_recharges SET invoice_id = $2 WHERE id = $1 AND invoice_id IS NULL`, [rechargeId, invoiceId]);
  }

  /** The recharge, locked for the rest of the transaction. */
  async lockRecharge(m: EntityManager, rechargeId: string): Promise<RechargeRow | undefined> {
    const [row] = await m.query(`SELECT ${RECHARGE_COLUMNS} FROM credit_recharges r WHERE r.id = $1 FOR UPDATE`, [rechargeId]);
    return row;
  }

  async settleRecharge(m: EntityManager, rechargeId: string, status: Exclude<RechargeStatus, 'pending'>, invoiceId: string | null): Promise<void> {
    await m.query(`UPDATE credit_recharges SET status = $2, invoice_id = COALESCE($3, invoice_id), settled_at = now() WHERE id = $1`, [
      rechargeId,
      status,
      invoiceId,
    ]);
  }
}
