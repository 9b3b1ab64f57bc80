import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { countsPerPeriod, perPeriodMetrics } from '../config/tiers';
import { NotificationsService } from '../notifications/notifications.service';
import { GRANT_CATEGORIES, GRANT_SOURCES, GrantCategory, GrantSource } from './credit-grant.entity';
import { AutoRechargeRecord, CreditGrantRecord } from './credits.dto';
import { AutoRechargeRow, CountingGrantRow, CreditsRepository, GrantRow, RechargeRow } from './credits.repository';

/** The largest grant (spec §16.2): 10^12 units. */
export const MAX_GRANT_AMOUNT = 1_000_000_000_000;
export const MAX_NOTE_LENGTH = 500;
const MAX_REFERENCE_LENGTH = 500;

/** A grant to make (spec §16.1). Times default to now (effective) and never (expiry); priority to 50. */
export interface GrantInput {
  organisationId: string;
  metric: string;
  amount: number;
  category: GrantCategory;
  source: GrantSource;
  /** What makes it unique for the organisation and source: a checkout session, an invoice, an idempotency key. */
  reference: string;
  priority?: number;
  effectiveAt?: Date;
  expiresAt?: Date | null;
  note?: string | null;
  /** An admin grant's request as given (a retry of its key with another body is a conflict, spec §16.2). */
  request?: Record<string, unknown>;
  /** The ledger entry's reference when it is not `reference` (an admin grant's: the operator). */
  ledgerReference?: string;
}

/** How an automatic top-up's purchase ended (the purchase side tells, spec §16.4). */
export type RechargeOutcome =
  | { status: 'paid'; invoiceId: string; amount: number; expiresAt: Date | null }
  | { status: 'failed'; error: string; invoiceId?: string };

/**
 * The grant as the API shows it: `remaining` 0 once voided or expired (expiry needs no job, spec §16.1). A grant that
 * counts (credits.counting_grants) is neither.
 */
export function grantRecord(g: CountingGrantRow | GrantRow): CreditGrantRecord {
  const voidedAt = 'voidedAt' in g ? g.voidedAt : null;
  const expired = 'expired' in g && g.expired;
  return {
    id: g.id,
    metric: g.metric,
    amount: g.amount,
    remaining: voidedAt !== null || expired ? 0 : g.remaining,
    category: g.category,
    priority: g.priority,
    source: g.source,
    effective_at: new Date(g.effectiveAt).toISOString(),
    expires_at: g.expiresAt === null ? null : new Date(g.expiresAt).toISOString(),
    voided_at: voidedAt === null ? null : new Date(voidedAt).toISOString(),
    note: g.note,
    created_at: new Date(g.createdAt).toISOString(),
  };
}

export function autoRechargeRecord(a: AutoRechargeRow): AutoRechargeRecord {
  return {
    metric: a.metric,
    pack: a.pack,
    threshold: a.threshold,
    monthly_limit: a.monthlyLimit,
    enabled: a.enabled,
    recharges_this_month: a.rechargesThisMonth,
    last_error: a.lastError,
  };
}

/**
 * Credits (spec §16): the one way a grant is made (admin, top-up, automatic top-up; rollovers through the same
 * database function), and the automatic top-up settings and purchases. Every write takes the caller's transaction.
 */
@Injectable()
export class CreditsService {
  constructor(
    private readonly credits: CreditsRepository,
    private readonly notifications: NotificationsService,
    private readonly config: AppConfig,
  ) {}

  /**
   * In the caller's transaction: the grant, exactly once per (organisation, source, reference), with its `grant`
   * ledger entry and a `credits.granted` notification. The same reference again answers the grant made then,
   * `created` false, and writes nothing. Bad values → 400, nothing written.
   */
  async grant(manager: EntityManager, input: GrantInput): Promise<{ grant: CreditGrantRecord; created: boolean }> {
    this.checkGrant(input);
    const { grantId, created } = await this.credits.grant(
      manager,
      {
        organisationId: input.organisationId,
        metric: input.metric,
        amount: input.amount,
        category: input.category,
        source: input.source,
        reference: input.reference,
        priority: input.priority ?? null,
        effectiveAt: input.effectiveAt ?? null,
        expiresAt: input.expiresAt ?? null,
        note: input.note ?? null,
        request: input.request ?? null,
        ledgerReference: input.ledgerReference ?? null,
      },
      this.config.notifyUrls,
    );
    const row = (await this.credits.findGrant(manager, input.organisationId, grantId))!;
    return { grant: grantRecord(row), created };
  }

  /** The grant as stored (also the request it was made with, for an admin grant's key); undefined when not the organisation's. */
  findGrant(manager: EntityManager, organisationId: string, grantId: string): Promise<GrantRow | undefined> {
    return this.credits.findGrant(manager, organisationId, grantId);
  }

  /** 400 `invalid_credit_metric` unless the metric counts per billing period (the only ones credits are for). */
  checkMetric(metric: string): void {
    if (!countsPerPeriod(this.config.tiers, metric)) {
      const metrics = perPeriodMetrics(this.config.tiers);
      throw new AppException('invalid_credit_metric', `"${metric}" is not a metric counted per billing period; credits are for ${metrics.join(', ')}.`);
    }
  }

  async autoRecharge(manager: EntityManager, organisationId: string, metric: string): Promise<AutoRechargeRecord | null> {
    const row = await this.credits.autoRecharge(manager, organisationId, metric);
    return row ? autoRechargeRecord(row) : null;
  }

  /** Saves an organisation's automatic top-up of `metric`, enabled (the pack is the caller's to check). */
  async saveAutoRecharge(
    manager: EntityManager,
    setting: { organisationId: string; metric: string; pack: string; threshold: number; monthlyLimit: number },
  ): Promise<AutoRechargeRecord> {
    this.checkMetric(setting.metric);
    integer('threshold', setting.threshold, 0, MAX_GRANT_AMOUNT);
    integer('monthly_limit', setting.monthlyLimit, 1, 100);
    return autoRechargeRecord(await this.credits.saveAutoRecharge(manager, setting));
  }

  /** Removes the setting; false when there was none. */
  deleteAutoRecharge(manager: EntityManager, organisationId: string, metric: string): Promise<boolean> {
    return this.credits.deleteAutoRecharge(manager, organisationId, metric);
  }

  /** Turns the setting off with the reason (a declined payment), until it is saved again; undefined when there is none. */
  async disableAutoRecharge(manager: EntityManager, organisationId: string, metric: string, error: string): Promise<AutoRechargeRecord | undefined> {
    const row = await this.credits.disableAutoRecharge(manager, organisationId, metric, error);
    return row && autoRechargeRecord(row);
  }

  /** Pending recharges for the automatic top-ups the reports made due, with their jobs (`task`); their ids. */
  startRecharges(due: { organisationId: string; metric: string }[], task: string, maxAttempts: number): Promise<string[]> {
    return this.credits.startRecharges(due, task, maxAttempts);
  }

  findRecharge(manager: EntityManager, rechargeId: string): Promise<RechargeRow | undefined> {
    return this.credits.findRecharge(manager, rechargeId);
  }

  /**
   * A pending recharge whose setting was removed or turned off before its purchase began: `failed`, quietly (no
   * notification, the setting untouched). An `invoice.paid` for it later still grants the pack (settleRecharge).
   */
  async abandonRecharge(manager: EntityManager, rechargeId: string): Promise<void> {
    const recharge = await this.credits.lockRecharge(manager, rechargeId);
    if (recharge?.status === 'pending') await this.credits.settleRecharge(manager, rechargeId, 'failed', null);
  }

  setRechargeInvoice(manager: EntityManager, rechargeId: string, invoiceId: string): Promise<void> {
    return this.credits.setRechargeInvoice(manager, rechargeId, invoiceId);
  }

  /**
   * In the caller's transaction, under the recharge's row lock: how its purchase ended. Paid: the pack's grant
   * (`auto_recharge`, paid, reference the invoice: once, whatever the number of calls, also for a recharge that
   * had failed and was paid later) and the recharge `paid`. Failed (only a pending one): the recharge `failed`,
   * the setting off with the error, and `credits.recharge_failed`. Undefined for an unknown recharge.
   */
  async settleRecharge(
    manager: EntityManager,
    rechargeId: string,
    outcome: RechargeOutcome,
  ): Promise<{ recharge: RechargeRow; grant?: { grant: CreditGrantRecord; created: boolean } } | undefined> {
    const recharge = await this.credits.lockRecharge(manager, rechargeId);
    if (!recharge) return undefined;
    if (outcome.status === 'paid') {
      if (recharge.status !== 'paid') await this.credits.settleRecharge(manager, rechargeId, 'paid', outcome.invoiceId);
      const grant = await this.grant(manager, {
        organisationId: recharge.organisationId,
        metric: recharge.metric,
        amount: outcome.amount,
        category: 'paid',
        source: 'auto_recharge',
        reference: outcome.invoiceId,
        expiresAt: outcome.expiresAt,
      });
      return { recharge: { ...recharge, status: 'paid', invoiceId: outcome.invoiceId }, grant };
    }
    if (recharge.status !== 'pending') return { recharge };
    await this.credits.settleRecharge(manager, rechargeId, 'failed', outcome.invoiceId ?? null);
    await this.disableAutoRecharge(manager, recharge.organisationId, recharge.metric, outcome.error);
    await this.notifications.notice(manager, recharge.organisationId, 'credits.recharge_failed', {
      metric: recharge.metric,
      pack: recharge.pack,
      recharge_id: recharge.id,
      error: outcome.error,
    });
    return { recharge: { ...recharge, status: 'failed', invoiceId: outcome.invoiceId ?? recharge.invoiceId } };
  }

  private checkGrant(g: GrantInput): void {
    this.checkMetric(g.metric);
    integer('amount', g.amount, 1, MAX_GRANT_AMOUNT);
    if (!GRANT_CATEGORIES.includes(g.category)) throw invalid(`category must be one of ${GRANT_CATEGORIES.join(', ')}`);
    if (!GRANT_SOURCES.includes(g.source)) throw invalid(`source must be one of ${GRANT_SOURCES.join(', ')}`);
    if (typeof g.reference !== 'string' || !g.reference.length || g.reference.length > MAX_REFERENCE_LENGTH) {
      throw invalid(`reference must be 1 to ${MAX_REFERENCE_LENGTH} characters`);
    }
    if (g.priority !== undefined) integer('priority', g.priority, 1, 100);
    const effective = g.effectiveAt ?? new Date();
    if (Number.isNaN(effective.getTime())) throw invalid('effective_at must be a date and time');
    if (g.expiresAt) {
      if (Number.isNaN(g.expiresAt.getTime())) throw invalid('expires_at must be a date and time');
      if (g.expiresAt.getTime() <= Date.now()) throw invalid('expires_at must be in the future');
      if (g.expiresAt.getTime() <= effective.getTime()) throw invalid('expires_at must be after effective_at');
    }
    if (g.note && g.note.length > MAX_NOTE_LENGTH) throw invalid(`note must be at most ${MAX_NOTE_LENGTH} characters`);
  }
}

const invalid = (message: string) => new AppException('validation_failed', message);

function integer(field: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) throw invalid(`${field} must be an integer from ${min} to ${max}`);
}
