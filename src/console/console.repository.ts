import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { licenseArguments } from '../config/tiers';
import { UUID } from '../identity/identity.service';

/** The overview's figures, as read. */
export interface OverviewRows {
  organisations: number;
  byTier: { tier: string; count: number }[];
  byStatus: { status: string; count: number }[];
  /** Webhook events of the last 24 hours per hour (ISO hour start) and status. */
  eventsPerHour: { hour: string; status: string; count: number }[];
  notifications: { pending: number; failed: number };
}

export interface OrganisationRow {
  id: string;
  name: string;
  externalId: string | null;
  customerId: string | null;
  createdAt: Date;
  /** In a search by part of an email: the members' emails that matched. */
  matchedEmails?: string[] | null;
}

export interface EventRow {
  id: string;
  type: string;
  status: string;
  reason: string | null;
  organisationId: string | null;
  /** The organisation's name, when the event matched one that still exists. */
  organisationName: string | null;
  customerId: string | null;
  subscriptionId: string | null;
  source: string;
  attempts: number;
  receivedAt: Date;
  /** received_at as PostgreSQL prints it (to the microsecond): the keyset cursor's time. */
  cursor: string;
}

export interface EventFilter {
  status?: string;
  type?: string;
  /** Received at or after / before these times. */
  from?: Date;
  to?: Date;
  organisationId?: string;
  /** Keyset: strictly older than this event (received_at, id). */
  before?: { receivedAt: string; id: string };
}

export interface OrganisationDetail {
  members: { userId: string; email: string; role: string; since: Date }[];
  subscriptions: {
    subscriptionId: string;
    tier: string | null;
    status: string | null;
    seats: number | null;
    interval: string | null;
    trialEnd: number | null;
    currentPeriodStart: number | null;
    currentPeriodEnd: number | null;
    cancelAtPeriodEnd: boolean;
    pendingChange: Record<string, unknown> | null;
    /** While past_due: since when, and until when its grace lasts (subscriptions.of_organisation). */
    graceSince: number | null;
    graceEndsAt: number | null;
  }[];
  invoices: { invoiceId: string; amountPaid: number; currency: string; paidAt: number; periodStart: number | null; periodEnd: number | null; hostedInvoiceUrl: string | null }[];
  notifications: { id: string; type: string; version: number; createdAt: Date; status: string; attempts: number; lastError: string | null }[];
}

export interface SyncRunRow {
  id: string;
  trigger: string;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: string;
  summary: Record<string, number> | null;
  error: string | null;
}

export interface NotificationRow {
  id: string;
  type: string;
  organisationId: string;
  organisationName: string | null;
  version: number;
  createdAt: Date;
  status: string;
  deliveries: { url: string; status: string; attempts: number; lastError: string | null }[];
}

const ORGANISATION_PAGE = `
  SELECT o.id, o.name, o.external_id AS "externalId", o.provider_customer_id AS "customerId", o.created_at AS "createdAt"
  FROM organisations o WHERE`;
// Parameters $1, $2 (the last row's name and id, or nulls) and $3 (rows).
const ORGANISATION_KEYSET = `AND ($1::text IS NULL OR (o.name, o.id) > ($1::text, $2::uuid)) ORDER BY o.name, o.id LIMIT $3`;
// A message's status: pending while any delivery is, else failed when any gave up, else delivered (as the outbox says).
const MESSAGE_STATUS = `CASE WHEN bool_or(d.status = 'pending') THEN 'pending' WHEN bool_or(d.status = 'failed') THEN 'failed' ELSE 'delivered' END`;

/** The shortest text searched for as part of a name or email: a trigram index needs three characters. */
export const PARTIAL_SEARCH_MIN = 3;
// Up to this many matches of a partial search are collected and sorted; beyond, the organisations are walked by name.
const PARTIAL_PROBE = 5000;

/** `%`, `_` and `\` in a search taken literally by LIKE. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The console's reads across the modules' tables (spec §14): the only file with SQL for its pages. It only
 * reads; every change the console makes goes through the owning module's service.
 */
@Injectable()
export class ConsoleRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  async overview(): Promise<OverviewRows> {
    const [[organisations], byTier, byStatus, eventsPerHour, [notifications]] = await Promise.all([
      this.db.query<{ count: number }[]>(`SELECT count(*)::int AS count FROM organisations`),
      // The organisations whose license is an active paid tier, by that tier: the license's own, of every organisation
      // at once (licensing.subscribed_licenses: one pass, the rule license_state filters by organisation); an
      // organisation whose license follows no subscription is on free.
      this.db.query<{ tier: string; count: number }[]>(
        `SELECT l.tier, count(*)::int AS count
         FROM licensing.subscribed_licenses($1::jsonb, $2::bigint) l
         WHERE l.is_active AND l.tier <> 'free'
         GROUP BY l.tier ORDER BY count DESC, l.tier`,
        [licenseArguments(this.config).tiers, licenseArguments(this.config).graceS],
      ),
      this.db.query<{ status: string; count: number }[]>(`
        SELECT COALESCE(status, 'unknown') AS status, count(*)::int AS count FROM provider_subscriptions
        GROUP BY 1 ORDER BY count DESC, status`),
      this.db.query<{ hour: string; status: string; count: number }[]>(`
        SELECT to_char(date_trunc('hour', received_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00') AS hour, status, count(*)::int AS count
        FROM webhook_events WHERE received_at > now() - interval '24 hours'
        GROUP BY 1, 2`),
      this.db.query<{ pending: number; failed: number }[]>(`
        SELECT (SELECT count(*)::int FROM notification_deliveries WHERE status = 'pending') AS pending,
               (SELECT count(*)::int FROM notification_deliveries WHERE status = 'failed') AS failed`),
    ]);
    return { organisations: organisations.count, byTier, byStatus, eventsPerHour, notifications };
  }

  /**
   * Organisations matching `query`, by name then id, keyset after `after`: every one when it is empty; else those
   * it names exactly (id, external id, provider customer id, a member's email, a subscription id: each an index
   * look-up), and only when it names none and has at least PARTIAL_SEARCH_MIN characters, those with it in their
   * name or in a member's email (any case; LIKE's wildcards in it taken literally), each with the members' emails
   * it matched. The query is a parameter, never SQL.
   */
  async searchOrganisations(query: string, after: { name: string; id: string } | undefined, rows: number): Promise<OrganisationRow[]> {
    const keyset = [after?.name ?? null, after?.id ?? null, rows];
    if (query === '') return this.db.query(`${ORGANISATION_PAGE} TRUE ${ORGANISATION_KEYSET}`, keyset);
    const exact = await this.db.query<OrganisationRow[]>(
      `${ORGANISATION_PAGE} o.id IN (
         SELECT id FROM organisations WHERE id = $4::uuid
         UNION ALL SELECT id FROM organisations WHERE external_id = $5 OR provider_customer_id = $5
         UNION ALL SELECT m.organisation_id FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.email = lower($5)
         UNION ALL SELECT organisation_id FROM provider_subscriptions WHERE subscription_id = $5) ${ORGANISATION_KEYSET}`,
      [...keyset, UUID.test(query) ? query : null, query],
    );
    // A next page is asked for only when rows of the same kind of match remain, so pages never mix kinds.
    if (exact.length || query.length < PARTIAL_SEARCH_MIN) return exact;
    const pattern = `%${likeLiteral(query)}%`;
    // Few matches (the trigram indexes find them): sort those. Many: walk the organisations by name, testing
    // each, which stops at the page's end instead of collecting and sorting every match.
    const probe = await this.db.query<{ kind: 'name' | 'email'; id: string }[]>(
      `SELECT 'name' AS kind, id FROM (SELECT id FROM organisations WHERE name ILIKE $1 LIMIT $2) AS n
       UNION ALL
       SELECT 'email', organisation_id FROM (SELECT m.organisation_id FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.email ILIKE $1 LIMIT $2) AS e`,
      [pattern, PARTIAL_PROBE + 1],
    );
    const many = (['name', 'email'] as const).some((kind) => probe.filter((p) => p.kind === kind).length > PARTIAL_PROBE);
    const matching = many
      ? `(o.name ILIKE $4 OR EXISTS (SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organisation_id = o.id AND u.email ILIKE $4
           OFFSET 0))` // OFFSET 0: tested per organisation, not hashed over every member first
      : `o.id = ANY($5::uuid[])`;
    return this.db.query(
      `SELECT o.id, o.name, o.external_id AS "externalId", o.provider_customer_id AS "customerId", o.created_at AS "createdAt",
              (SELECT array_agg(u.email ORDER BY u.email) FROM memberships m JOIN users u ON u.id = m.user_id
               WHERE m.organisation_id = o.id AND u.email ILIKE $4) AS "matchedEmails"
       FROM organisations o WHERE ${matching} ${ORGANISATION_KEYSET}`,
      many ? [...keyset, pattern] : [...keyset, pattern, [...new Set(probe.map((p) => p.id))]],
    );
  }

  /** Organisation names and user emails by id (for pages that would otherwise show bare ids); unknown ids are left out. */
  async labels(organisationIds: string[], userIds: string[]): Promise<{ organisations: Map<string, string>; emails: Map<string, string> }> {
    const uuids = (ids: string[]) => [...new Set(ids.filter((id) => UUID.test(id)))];
    const [organisations, users] = await Promise.all([
      this.db.query<{ id: string; name: string }[]>(`SELECT id, name FROM organisations WHERE id = ANY($1::uuid[])`, [uuids(organisationIds)]),
      this.db.query<{ id: string; email: string }[]>(`SELECT id, email FROM users WHERE id = ANY($1::uuid[])`, [uuids(userIds)]),
    ]);
    return { organisations: new Map(organisations.map((o) => [o.id, o.name])), emails: new Map(users.map((u) => [u.id, u.email])) };
  }

  /** Notifications newest first, with each URL's delivery; `status` is the message's (as the outbox defines it). */
  notifications(status: string | undefined, rows: number): Promise<NotificationRow[]> {
    return this.db.query(
      `SELECT m.id, m.type, m.organisation_id AS "organisationId", o.name AS "organisationName", m.version::float8 AS version, m.created_at AS "createdAt",
              agg.status, agg.deliveries
       FROM notification_messages m
       LEFT JOIN organisations o ON o.id = m.organisation_id
       CROSS JOIN LATERAL (
         SELECT ${MESSAGE_STATUS} AS status,
                json_agg(json_build_object('url', d.url, 'status', d.status, 'attempts', d.attempts, 'lastError', d.last_error) ORDER BY d.url) AS deliveries
         FROM notification_deliveries d WHERE d.message_id = m.id) AS agg
       WHERE ($1::text IS NULL OR $1 = 'delivered' OR m.id IN (SELECT message_id FROM notification_deliveries WHERE status = $1))
         AND ($1::text IS NULL OR agg.status = $1)
       ORDER BY m.created_at DESC LIMIT $2`,
      [status ?? null, rows],
    );
  }

  async organisation(id: string): Promise<OrganisationRow | undefined> {
    if (!UUID.test(id)) return undefined;
    const rows = await this.db.query<OrganisationRow[]>(
      `SELECT id, name, external_id AS "externalId", provider_customer_id AS "customerId", created_at AS "createdAt"
       FROM organisations WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /** What the organisation page shows besides the license: each list newest first, at most `rows` long. */
  async organisationDetail(id: string, rows: number): Promise<OrganisationDetail> {
    const [members, subscriptions, invoices, notifications] = await Promise.all([
      this.db.query(
        `SELECT u.id AS "userId", u.email, m.role, m.created_at AS since
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organisation_id = $1 ORDER BY m.created_at, u.email LIMIT $2`,
        [id, rows],
      ),
      this.db.query(
        `SELECT p.subscription_id AS "subscriptionId", p.tier, p.status, p.seats, p.interval, p.trial_end::float8 AS "trialEnd",
                p.current_period_start::float8 AS "currentPeriodStart", p.current_period_end::float8 AS "currentPeriodEnd",
                p.cancel_at_period_end AS "cancelAtPeriodEnd", p.pending_change AS "pendingChange",
                g.grace_since::float8 AS "graceSince", g.grace_ends_at::float8 AS "graceEndsAt"
         FROM provider_subscriptions p JOIN subscriptions.of_organisation($1, $3::bigint) g USING (subscription_id)
         WHERE p.organisation_id = $1 ORDER BY p.updated_at DESC LIMIT $2`,
        [id, rows, licenseArguments(this.config).graceS],
      ),
      this.db.query(
        `SELECT invoice_id AS "invoiceId", amount_paid::float8 AS "amountPaid", currency, paid_at::float8 AS "paidAt",
                period_start::float8 AS "periodStart", period_end::float8 AS "periodEnd", hosted_invoice_url AS "hostedInvoiceUrl"
         FROM billing_history WHERE organisation_id = $1 ORDER BY paid_at DESC, id DESC LIMIT $2`,
        [id, rows],
      ),
      this.db.query(
        `SELECT m.id, m.type, m.version::float8 AS version, m.created_at AS "createdAt",
                ${MESSAGE_STATUS} AS status,
                COALESCE(sum(d.attempts), 0)::int AS attempts, max(d.last_error) AS "lastError"
         FROM notification_messages m LEFT JOIN notification_deliveries d ON d.message_id = m.id
         WHERE m.organisation_id = $1 GROUP BY m.id ORDER BY m.version DESC LIMIT $2`,
        [id, rows],
      ),
    ]);
    return { members, subscriptions, invoices, notifications };
  }

  /** Webhook events, newest first (received_at, id), filtered, with the name of the organisation each matched. */
  events(filter: EventFilter, rows: number): Promise<EventRow[]> {
    return this.db.query(
      `SELECT e.id, e.type, e.status, e.reason, e.organisation_id AS "organisationId", o.name AS "organisationName", e.customer_id AS "customerId",
              e.subscription_id AS "subscriptionId", e.source, e.attempts, e.received_at AS "receivedAt", e.received_at::text AS cursor
       FROM (SELECT * FROM webhook_events
             WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR type = $2)
               AND ($3::timestamptz IS NULL OR received_at >= $3) AND ($4::timestamptz IS NULL OR received_at < $4)
               AND ($5::uuid IS NULL OR organisation_id = $5)
               AND ($6::timestamptz IS NULL OR (received_at, id) < ($6, $7::text))
             ORDER BY received_at DESC, id DESC LIMIT $8) AS e
       LEFT JOIN organisations o ON o.id = e.organisation_id
       ORDER BY e.received_at DESC, e.id DESC`,
      [
        filter.status ?? null,
        filter.type ?? null,
        filter.from ?? null,
        filter.to ?? null,
        filter.organisationId ?? null,
        filter.before?.receivedAt ?? null,
        filter.before?.id ?? null,
        rows,
      ],
    );
  }

  /** One event with its stored payload (as received, JSON text). */
  async event(id: string): Promise<(Omit<EventRow, 'cursor'> & { payload: string; processedAt: Date | null; created: number }) | undefined> {
    const rows = await this.db.query(
      `SELECT e.id, e.type, e.status, e.reason, e.organisation_id AS "organisationId", o.name AS "organisationName", e.customer_id AS "customerId",
              e.subscription_id AS "subscriptionId", e.source, e.attempts, e.received_at AS "receivedAt",
              e.processed_at AS "processedAt", e.created::float8 AS created, e.payload
       FROM webhook_events e LEFT JOIN organisations o ON o.id = e.organisation_id WHERE e.id = $1`,
      [id],
    );
    return rows[0];
  }

  /** The event types the ledger holds (for the filter's choices). */
  async eventTypes(): Promise<string[]> {
    // A loose index scan: one index probe per distinct type instead of reading every row.
    const rows = await this.db.query<{ type: string }[]>(
      `WITH RECURSIVE t AS (
         (SELECT type FROM webhook_events ORDER BY type LIMIT 1)
         UNION ALL
         SELECT (SELECT type FROM webhook_events WHERE type > t.type ORDER BY type LIMIT 1) FROM t WHERE t.type IS NOT NULL)
       SELECT type FROM t WHERE type IS NOT NULL`,
    );
    return rows.map((r) => r.type);
  }

  syncRuns(rows: number): Promise<SyncRunRow[]> {
    return this.db.query(
      `SELECT id, trigger, started_at AS "startedAt", finished_at AS "finishedAt", outcome, summary, error
       FROM provider_sync_runs ORDER BY started_at DESC LIMIT $1`,
      [rows],
    );
  }
}
