import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { perPeriodMetrics } from '../config/tiers';
import { AppConfig } from '../config/app-config';
import { CreditsAdminService } from '../credits/credits-admin.service';
import { CreditsReadService } from '../credits/credits-read.service';
import { checkedGrantBody } from '../credits/credits-routes.dto';
import { transaction } from '../database/transaction';
import { EntitlementsService } from '../licensing/entitlements.service';
import { ExplainService } from '../licensing/explain.service';
import { LicensingService } from '../licensing/licensing.service';
import { OverridesService } from '../licensing/overrides.service';
import { displayUrl } from '../notifications/notification-delivery.service';
import { NotificationOutbox } from '../notifications/notification-outbox';
import { DeliveryStatus } from '../notifications/notification-delivery.entity';
import { EventDispatcher } from '../webhook/event-dispatcher';
import { ProviderSyncSchedule } from '../webhook/provider-sync.schedule';
import { LedgerStatus } from '../provider/provider-event';
import { AuditRecord } from '../audit/audit.dto';
import type { Operator } from './console-auth.service';
import { ActorText, actorText, auditChanges, explainTimeline, FieldChange } from './console-text';
import type { Flash } from './console-views';
import { ConsoleRepository, EventFilter, EventRow, OverviewRows } from './console.repository';

export interface HourlyChart {
  /** `HH:00` (UTC) of each of the last 24 hours, oldest first. */
  hours: string[];
  series: { label: string; data: number[] }[];
}

export interface Overview {
  organisations: number;
  byTier: { tier: string; count: number }[];
  byStatus: { status: string; count: number }[];
  events: number;
  failed: number;
  unmatched: number;
  pendingNotifications: number;
  failedNotifications: number;
  chart: HourlyChart;
}

/** How the console reads an organisation's credits: as a trusted caller (a signed-in operator reads any). */
const CONSOLE_READER = { serviceKey: 'console' } as const;

/** Rows per page of every list. */
export const PAGE_ROWS = 50;
/** Rows of each list on the organisation page. */
const DETAIL_ROWS = 20;

// The chart's series: the outcomes an operator acts on, the rest together.
const SERIES: { label: string; statuses: string[] }[] = [
  { label: 'processed', statuses: ['processed'] },
  { label: 'failed', statuses: ['failed'] },
  { label: 'unmatched', statuses: ['unmatched'] },
  { label: 'other (duplicate, stale, ignored)', statuses: ['duplicate', 'stale', 'ignored'] },
];

/** The ledger statuses a replay can change: the others are final (spec §14). */
export const REPLAYABLE: readonly LedgerStatus[] = ['failed', 'unmatched'];

/** A keyset cursor as it travels in a URL: opaque, base64url of JSON. */
export const cursor = {
  encode: (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url'),
  decode<T>(text: unknown, valid: (value: any) => value is T): T | undefined {
    if (typeof text !== 'string' || text === '') return undefined;
    try {
      const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
      if (valid(value)) return value;
    } catch {
      // fall through: a cursor that is not one of ours
    }
    throw new AppException('validation_failed', 'The page cursor is not valid: start from the first page.');
  },
};

/**
 * What the console's pages show, from the console repository's reads and the modules' services, and its
 * actions, each through the owning module's service (which writes the audit entry in its transaction).
 */
@Injectable()
export class ConsoleService {
  constructor(
    private readonly repository: ConsoleRepository,
    private readonly licensing: LicensingService,
    private readonly entitlements: EntitlementsService,
    private readonly overrides: OverridesService,
    private readonly explainer: ExplainService,
    private readonly dispatcher: EventDispatcher,
    private readonly outbox: NotificationOutbox,
    private readonly sync: ProviderSyncSchedule,
    private readonly audit: AuditService,
    private readonly creditsRead: CreditsReadService,
    private readonly creditsAdmin: CreditsAdminService,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async overview(now = new Date()): Promise<Overview> {
    const rows = await this.repository.overview();
    const total = (statuses: string[]) => rows.eventsPerHour.filter((r) => statuses.includes(r.status)).reduce((sum, r) => sum + r.count, 0);
    return {
      organisations: rows.organisations,
      byTier: rows.byTier,
      byStatus: rows.byStatus,
      events: total(SERIES.flatMap((s) => s.statuses)),
      failed: total(['failed']),
      unmatched: total(['unmatched']),
      pendingNotifications: rows.notifications.pending,
      failedNotifications: rows.notifications.failed,
      chart: hourlyChart(rows.eventsPerHour, now),
    };
  }

  async organisations(query: string, after: string | undefined) {
    const key = cursor.decode(after, (v): v is { name: string; id: string } => typeof v?.name === 'string' && typeof v?.id === 'string');
    const rows = await this.repository.searchOrganisations(query.trim().slice(0, 200), key, PAGE_ROWS + 1);
    const page = rows.slice(0, PAGE_ROWS);
    const last = page.at(-1);
    return { rows: page, next: rows.length > PAGE_ROWS && last ? cursor.encode({ name: last.name, id: last.id }) : undefined };
  }

  async organisation(id: string) {
    const organisation = await this.repository.organisation(id);
    if (!organisation) throw new AppException('organisation_not_found', `No organisation with id ${id}.`);
    const [status, entitlements, overrides, explain, detail, events, audit, credits, creditLedger] = await Promise.all([
      this.licensing.status(this.db.manager, id, null),
      this.entitlements.read(id),
      this.overrides.list(id),
      this.explainer.explain(id, null),
      this.repository.organisationDetail(id, DETAIL_ROWS),
      this.repository.events({ organisationId: id }, DETAIL_ROWS),
      this.audit.page({ organisationId: id, limit: DETAIL_ROWS }),
      this.creditsRead.credits(id, CONSOLE_READER),
      this.creditsRead.ledger(id, CONSOLE_READER, { limit: DETAIL_ROWS }),
    ]);
    const sets = await this.audit.overrideSets(id, overrides.map((o) => o.name));
    const labels = await this.repository.labels([], [...audit.data, ...sets.values()].map((a) => userIdOf(a.actor)));
    const timeline = explainTimeline(explain, {
      periods: new Map(detail.subscriptions.map((sub) => [sub.subscriptionId, sub])),
      overrideEntries: new Map([...sets].map(([name, entry]) => [name, { id: entry.id, by: actorText(entry.actor, labels.emails).text }])),
    });
    const overridden = new Map(overrides.map((o) => [o.name, o]));
    return {
      organisation,
      status,
      entitlements,
      overrides,
      overridden,
      explain,
      timeline,
      ...detail,
      events,
      audit: audit.data.map((a) => auditView(a, labels)),
      credits: credits.data,
      creditLedger: creditLedger.data,
      // A grant may be given for any metric counted per period; it counts where the tier in force sells it as credits.
      creditMetrics: perPeriodMetrics(this.config.tiers),
      // The grant form's idempotency key: submitting the same form twice gives one grant.
      grantKey: `console-${randomUUID()}`,
    };
  }

  async events(filter: Omit<EventFilter, 'before'>, before: string | undefined) {
    const key = cursor.decode(before, (v): v is { at: string; id: string } => typeof v?.at === 'string' && typeof v?.id === 'string');
    const [rows, types] = await Promise.all([
      this.repository.events({ ...filter, before: key && { receivedAt: key.at, id: key.id } }, PAGE_ROWS + 1),
      this.repository.eventTypes(),
    ]);
    const page = rows.slice(0, PAGE_ROWS);
    const last = page.at(-1);
    return { rows: page, types, next: rows.length > PAGE_ROWS && last ? cursor.encode({ at: last.cursor, id: last.id }) : undefined };
  }

  async event(id: string) {
    const event = await this.repository.event(id);
    if (!event) throw new AppException('event_not_found', `No webhook event with id ${id}.`);
    let payload = event.payload;
    try {
      payload = JSON.stringify(JSON.parse(event.payload), null, 2);
    } catch {
      // shown as stored
    }
    return { ...event, payload, replayable: REPLAYABLE.includes(event.status as LedgerStatus) };
  }

  async notifications(status: DeliveryStatus | undefined) {
    const rows = await this.repository.notifications(status, PAGE_ROWS);
    // URLs as the outbox shows them: a query string (which may hold a token) is never displayed.
    return rows.map((n) => ({ ...n, deliveries: n.deliveries.map((d) => ({ ...d, url: displayUrl(d.url) })) }));
  }

  /** A page of the audit log, newest first, in words (names and emails for ids, changed fields before → after). */
  async auditLog(startingAfter: string | undefined) {
    const page = await this.audit.page({ limit: PAGE_ROWS, startingAfter });
    const labels = await this.labelsOf(page.data);
    return { rows: page.data.map((a) => auditView(a, labels)), next: page.has_more ? page.data.at(-1)?.id : undefined };
  }

  /** One audit entry in words (what an explanation's override links to). */
  async auditEntry(id: string): Promise<AuditView> {
    const entry = await this.audit.entry(id);
    return auditView(entry, await this.labelsOf([entry]));
  }

  private labelsOf(entries: AuditRecord[]) {
    return this.repository.labels(
      entries.flatMap((a) => (a.organisation_id ? [a.organisation_id] : [])),
      entries.map((a) => userIdOf(a.actor)),
    );
  }

  syncRuns() {
    return this.repository.syncRuns(PAGE_ROWS);
  }

  /** Replays a `failed` or `unmatched` event through the dispatcher (audited there as `event.replayed`). */
  async replay(id: string, operator: Operator): Promise<Flash> {
    const event = await this.repository.event(id);
    if (!event) return { kind: 'refused', text: `Refused: there is no webhook event ${id}.` };
    if (!REPLAYABLE.includes(event.status as LedgerStatus)) {
      return { kind: 'refused', text: `Refused: event ${id} is ${event.status}; only a failed or unmatched event can be replayed (its outcome is final).` };
    }
    const result = await this.dispatcher.replay(id, operator.actor);
    return result.status === 'processed'
      ? { kind: 'done', text: `Replayed event ${id}: processed.` }
      : { kind: 'refused', text: `Replayed event ${id}: still ${result.status}${result.reason ? ` (${result.reason})` : ''}.` };
  }

  /**
   * Sets an override from the editor's fields (audited by the overrides service as `override.set`): `value`
   * `true`/`false` for a feature, a whole number for a metric's limit; `expiresAt` a UTC date and time or empty.
   */
  async setOverride(organisationId: string, fields: { name: string; value: string; expiresAt: string; note: string }, operator: Operator): Promise<Flash> {
    const value = fields.value === 'true' ? true : fields.value === 'false' ? false : /^\d{1,15}$/.test(fields.value) ? Number(fields.value) : fields.value;
    const expires = fields.expiresAt ? new Date(`${fields.expiresAt}${fields.expiresAt.length === 16 ? ':00' : ''}Z`) : undefined;
    if (expires && Number.isNaN(expires.getTime())) return { kind: 'refused', text: 'Refused: the expiry is not a date and time.' };
    return this.refusedAsFlash(async () => {
      await this.overrides.set(operator.actor, organisationId, fields.name, {
        value: value as boolean | number,
        ...(expires ? { expires_at: expires.toISOString() } : {}),
        ...(fields.note ? { note: fields.note } : {}),
      });
      return { kind: 'done', text: `Override of ${fields.name} set to ${String(value)}${expires ? ` until ${expires.toISOString()}` : ''}.` };
    });
  }

  /** Removes an override (audited as `override.deleted`). */
  removeOverride(organisationId: string, name: string, operator: Operator): Promise<Flash> {
    return this.refusedAsFlash(async () => {
      await this.overrides.delete(operator.actor, organisationId, name);
      return { kind: 'done', text: `Override of ${name} removed.` };
    });
  }

  /**
   * Gives a credit grant from the organisation page's form (audited by the credits module as
   * `credit_grant.created`): `amount` and `priority` whole numbers, `expiresAt` a UTC date and time or empty. The
   * form's idempotency key makes a second submission of the same form answer the grant it made.
   */
  async grantCredits(
    organisationId: string,
    fields: { metric: string; amount: string; category: string; priority: string; expiresAt: string; note: string; idempotencyKey: string },
    operator: Operator,
  ): Promise<Flash> {
    const expires = fields.expiresAt ? new Date(`${fields.expiresAt}${fields.expiresAt.length === 16 ? ':00' : ''}Z`) : undefined;
    if (expires && Number.isNaN(expires.getTime())) return { kind: 'refused', text: 'Refused: the expiry is not a date and time.' };
    return this.refusedAsFlash(async () => {
      const body = checkedGrantBody({
        metric: fields.metric,
        amount: fields.amount,
        ...(fields.category ? { category: fields.category } : {}),
        ...(fields.priority ? { priority: fields.priority } : {}),
        ...(expires ? { expires_at: expires.toISOString() } : {}),
        ...(fields.note ? { note: fields.note } : {}),
        idempotency_key: fields.idempotencyKey,
      });
      const { grant, created } = await this.creditsAdmin.grant(operator.actor, organisationId, body);
      const what = `${grant.amount} ${grant.metric} (${grant.category}${grant.expires_at ? `, until ${grant.expires_at}` : ''})`;
      return { kind: 'done', text: created ? `Granted ${what}.` : `This form already granted ${what}; nothing more was given.` };
    });
  }

  /** Voids a grant (audited as `credit_grant.voided`); one voided before is said so, and nothing changes. */
  voidCredits(organisationId: string, grantId: string, operator: Operator): Promise<Flash> {
    return this.refusedAsFlash(async () => {
      const grant = await this.creditsAdmin.void(operator.actor, organisationId, grantId);
      return { kind: 'done', text: `Grant ${grant.id} voided: ${grant.metric} written off, nothing left of it.` };
    });
  }

  /** A 4xx of the owning service is a refusal shown on the page, with its reason; anything else stays an error. */
  private async refusedAsFlash(work: () => Promise<Flash>): Promise<Flash> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof AppException && err.getStatus() < 500) return { kind: 'refused', text: `Refused: ${err.message}` };
      throw err;
    }
  }

  /** Sends a notification again to every URL (audited by the outbox as `notification.retried`). */
  async retry(id: string, operator: Operator): Promise<Flash> {
    try {
      const { requeued } = await this.outbox.retry(id, operator.actor);
      return { kind: 'done', text: `Notification ${id} queued again for ${requeued} URL${requeued === 1 ? '' : 's'}.` };
    } catch (err) {
      if (err instanceof AppException && err.code === 'notification_not_found') return { kind: 'refused', text: `Refused: ${err.message}` };
      throw err;
    }
  }

  /** Starts a reconciliation run now, in the background, unless one is under way (audited as `reconciliation.started`). */
  async runSync(operator: Operator): Promise<Flash> {
    if ((await this.sync.start(operator.actor.actor)) === 'busy') {
      return { kind: 'refused', text: 'Refused: a reconciliation run is already under way (here or on another instance). Try again when it has finished.' };
    }
    await transaction(this.db, (m) => this.audit.record(m, operator.actor, { action: 'reconciliation.started', organisationId: null }));
    return { kind: 'done', text: 'Reconciliation started. It runs in the background: reload this page to see its summary.' };
  }
}

/** An audit entry as the console shows it: who in words (ids kept), the organisation by name, what changed. */
export interface AuditView {
  id: string;
  at: string;
  action: string;
  actor: ActorText;
  organisation: { id: string; name: string | null } | null;
  changes: FieldChange[];
  requestId: string | null;
}

function auditView(a: AuditRecord, labels: { organisations: ReadonlyMap<string, string>; emails: ReadonlyMap<string, string> }): AuditView {
  return {
    id: a.id,
    at: a.at,
    action: a.action,
    actor: actorText(a.actor, labels.emails),
    organisation: a.organisation_id ? { id: a.organisation_id, name: labels.organisations.get(a.organisation_id) ?? null } : null,
    changes: auditChanges(a.before, a.after),
    requestId: a.request_id,
  };
}

/** The user id in a `user:<id>` actor ('' for any other actor). */
function userIdOf(actor: string): string {
  return actor.startsWith('user:') ? actor.slice('user:'.length) : '';
}

function hourlyChart(rows: OverviewRows['eventsPerHour'], now: Date): HourlyChart {
  const hours = Array.from({ length: 24 }, (_, i) => new Date(now.getTime() - (23 - i) * 3_600_000).toISOString().slice(0, 13) + ':00');
  return {
    hours: hours.map((hour) => hour.slice(11)),
    series: SERIES.map(({ label, statuses }) => ({
      label,
      data: hours.map((hour) => rows.filter((r) => r.hour === hour && statuses.includes(r.status)).reduce((sum, r) => sum + r.count, 0)),
    })),
  };
}

export type { EventRow };
