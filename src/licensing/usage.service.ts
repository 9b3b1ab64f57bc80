import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import type { ErrorCode } from '../common/error-codes';
import { AppConfig } from '../config/app-config';
import { perPeriodMetrics, reportedMetrics } from '../config/tiers';
import { transaction } from '../database/transaction';
import { organisationNotFound } from '../identity/identity.service';
import { RechargeDue, UsageCommits } from './usage-commits';
import { LimitExceeded, UsageContended } from './usage-errors';
import { AppliedRow, ReservationAnswer, StatementEvent, UsageAnswer, UsageEvent, UsageRepository } from './usage.repository';

export type { ReservationAnswer, UsageAnswer, UsageEvent } from './usage.repository';

/** What a single report of an event answers: 200 with the counter (201 with a hold), or the error it would throw. */
export type UsageOutcome =
  | { status: 200; answer: UsageAnswer }
  | { status: 201; reservation: ReservationAnswer }
  | { status: number; error: AppException };

// The most events one statement takes: a batch's limit, and the most concurrent single reports grouped.
const MAX_EVENTS = 1000;
// Statements of grouped single reports under way at once (of the pool's DATABASE_POOL_SIZE connections, 10 by
// default): one. The reports arriving while it runs make the next group, so each statement's fixed cost (its plan's
// start, its commit's WAL flush) serves as many as arrived; other requests always find a connection. A statement
// that waits for a row lock another writer holds delays this process's next group with it (at most the statement
// timeout). Measured side by side against two on two cores (docs/performance.md): a reservation pair 0.39-0.40x
// health against 0.35x, a credits report 0.85-0.88x against 0.78x, a plain report 1.13-1.22x against 1.12x; one hot
// organisation 1.25-1.32x against 1.48x (its target: 0.8x). Three measured worse than two, as four had.
const MAX_STATEMENTS = 1;
// A statement fails as contended only after a concurrent writer created a counter, took a key or settled a
// reservation it wanted, and the next one sees that writer's commit; a few rounds are far more than a race can need.
const MAX_ROUNDS = 5;

interface Waiting {
  event: StatementEvent;
  /** The queue it waits in: its organisation's (a commit that names none: its reservation's). */
  queue: string;
  resolve: (outcome: UsageOutcome) => void;
  reject: (err: unknown) => void;
}

/**
 * Records usage reported by trusted back-ends (spec §7, §13): every report, single or in a batch, goes
 * through one statement (UsageRepository.apply) that applies events in order under the counters' row locks.
 *
 * Single reports, holds and commits (spec §16.5) are grouped: while a statement is under way (MAX_STATEMENTS), the
 * ones that arrive wait, and go together in the next one, as a batch would; an organisation's in arrival order,
 * and never in two statements at once (a report for an organisation with a statement under way waits for it). One
 * statement and one commit then serve many reports, whether of one hot organisation (where each used to hold
 * the counter's lock through its own commit) or of many (where each paid a statement and a commit). Each
 * report is answered only after its statement committed; a statement that fails answers the error to every
 * report of its group, none of which was counted.
 */
@Injectable()
export class UsageService {
  /** Waiting reports by queue (their organisation), queues in the order their first waiting report arrived. */
  private readonly waiting = new Map<string, Waiting[]>();
  /** Queues with a statement under way. */
  private readonly busy = new Set<string>();
  private running = 0;
  /** The metrics of the tier table that reports may name. */
  readonly metrics: readonly string[];
  /** The metrics counted per billing period: they take no negative report. */
  readonly perPeriod: readonly string[];

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly usage: UsageRepository,
    private readonly commits: UsageCommits,
    config: AppConfig,
  ) {
    this.metrics = reportedMetrics(config.tiers);
    this.perPeriod = perPeriodMetrics(config.tiers);
  }

  /** A single report: its answer, or throws what a refused one answers (400, 402, 404, 409). */
  async record(event: UsageEvent): Promise<UsageAnswer> {
    checkEvent(event, this);
    return ((await this.single(event, event.organisationId)) as { answer: UsageAnswer }).answer;
  }

  /**
   * A hold (spec §16.5): `amount` held against what the metric allows for `ttlS` seconds, exactly as a report of
   * it would be checked; throws what a refused one answers (402, 404, 409). Grouped as a single report is.
   */
  async reserve(event: UsageEvent & { holdTtlS: number }): Promise<ReservationAnswer> {
    checkEvent(event, this);
    return ((await this.single(event, event.organisationId)) as { reservation: ReservationAnswer }).reservation;
  }

  /**
   * A reservation's commit (spec §16.5): `amount` reported as one usage report keyed by the reservation id, its
   * hold's rest released; after its expiry an ordinary report (`expired: true`). Throws what a refused one answers.
   * With `organisationId`, a reservation of another organisation is unknown (404), as if it did not exist.
   */
  async commit(reservation: string, amount: number, organisationId?: string): Promise<UsageAnswer> {
    const event = organisationId === undefined ? { reservation, amount } : { reservation, amount, organisationId };
    return ((await this.single(event, organisationId ?? `reservation ${reservation}`)) as { answer: UsageAnswer }).answer;
  }

  /** One event, grouped with the others waiting (see the class): its answer, or throws what it was refused with. */
  private async single(event: StatementEvent, queue: string): Promise<UsageOutcome> {
    const outcome = await new Promise<UsageOutcome>((resolve, reject) => {
      const waiting = this.waiting.get(queue);
      if (waiting) waiting.push({ event, queue, resolve, reject });
      else this.waiting.set(queue, [{ event, queue, resolve, reject }]);
      this.start();
    });
    if ('error' in outcome) throw outcome.error;
    return outcome;
  }

  /**
   * Events in order (at most MAX_EVENTS, their amounts checked), each with its own outcome, all applied or none. One
   * statement applies all or nothing by itself (UsageRepository.apply) and needs no transaction; a batch that uses a
   * key twice runs as several (see runsWithoutRepeatedKeys), in one transaction. Contended by a concurrent writer, it
   * runs again with what that writer committed.
   */
  async apply(events: StatementEvent[]): Promise<UsageOutcome[]> {
    if (!events.length) return [];
    const runs = runsWithoutRepeatedKeys(events);
    for (let round = 1; ; round++) {
      const due: RechargeDue[] = [];
      try {
        const outcomes =
          runs.length === 1
            ? await this.applyRun(this.db.manager, runs[0], due)
            : await transaction(this.db, async (m) => {
                const all: UsageOutcome[] = [];
                for (const run of runs) all.push(...(await this.applyRun(m, run, due)));
                return all;
              });
        this.commits.rechargeDue(due);
        return outcomes;
      } catch (err) {
        if (!(err instanceof UsageContended) || round === MAX_ROUNDS) throw err;
      }
    }
  }

  /** Statements for the waiting reports of organisations not under way, while fewer than MAX_STATEMENTS run. */
  private start(): void {
    while (this.running < MAX_STATEMENTS) {
      const group: Waiting[] = [];
      for (const [queue, waiting] of this.waiting) {
        if (group.length === MAX_EVENTS) break;
        if (this.busy.has(queue)) continue;
        group.push(...waiting.splice(0, MAX_EVENTS - group.length));
        if (!waiting.length) this.waiting.delete(queue);
        this.busy.add(queue);
      }
      if (!group.length) return;
      this.running++;
      void this.run(group);
    }
  }

  private async run(group: Waiting[]): Promise<void> {
    try {
      const outcomes = await this.apply(group.map((w) => w.event));
      group.forEach((w, i) => w.resolve(outcomes[i]));
    } catch (err) {
      // The statement (or its transaction) failed whole: nothing of the group committed.
      for (const w of group) w.reject(err);
    } finally {
      for (const w of group) this.busy.delete(w.queue);
      this.running--;
      this.start();
    }
  }

  private async applyRun(m: EntityManager, events: StatementEvent[], due: RechargeDue[]): Promise<UsageOutcome[]> {
    const rows = await this.usage.apply(m, events);
    return rows.map((row, i) => {
      if (row.rechargeDue && row.organisationId && row.metric) due.push({ organisationId: row.organisationId, metric: row.metric });
      return toOutcome(events[i], row);
    });
  }
}

/**
 * The values a report's shape does not settle: its metric is one the tier table lets back-ends report (the
 * three's `projects` and `ai_tokens`, and the table's further metrics, spec §11.1), and a metric counted per
 * period (ai_tokens, spec §7, and those declared `per_period`, §16.1) only grows, so the statement is never asked
 * to apply a negative amount of one.
 */
export function checkEvent(event: UsageEvent, table: { metrics: readonly string[]; perPeriod: readonly string[] }): void {
  if (!table.metrics.includes(event.metric)) {
    throw new AppException('validation_failed', `metric must be one of the following values: ${table.metrics.join(', ')}`);
  }
  if (event.amount < 0 && table.perPeriod.includes(event.metric)) {
    throw new AppException('negative_amount', `${event.metric} usage counts per billing period and can only grow; amount must be positive.`);
  }
}

function toOutcome(event: StatementEvent, row: AppliedRow): UsageOutcome {
  if (row.status === 201) return { status: 201, reservation: (row.response as ReservationAnswer | null) ?? reservation(event as UsageEvent, row) };
  if (row.status === 200) return { status: 200, answer: (row.response as UsageAnswer | null) ?? answer(row) };
  const code = row.code as ErrorCode;
  const key = 'reservation' in event ? event.reservation : event.idempotencyKey;
  switch (code) {
    case 'limit_exceeded':
    case 'insufficient_credits':
      return { status: 402, error: new LimitExceeded(code, answer(row), refusal(event.amount, row)) };
    case 'organisation_not_found':
      return { status: 404, error: organisationNotFound((event as UsageEvent).organisationId) };
    case 'idempotency_key_reused':
      return { status: 409, error: new AppException(code, `Idempotency key "${key}" was already used for a different report.`) };
    case 'reservation_committed':
      return { status: 409, error: new AppException(code, `Reservation ${key} was already committed with another amount.`) };
    case 'reservation_released':
      return { status: 409, error: new AppException(code, `Reservation ${key} was released: nothing is held to commit.`) };
    case 'reservation_exceeded':
      return { status: 400, error: new AppException(code, `A commit of ${event.amount} is more than reservation ${key} holds.`) };
    default:
      return { status: 404, error: new AppException('reservation_not_found', `No reservation ${key}.`) };
  }
}

/** Why a report (or a hold) was refused, with what it was refused against. */
function refusal(amount: number, row: AppliedRow): string {
  if (row.policy === 'credits') {
    return `${amount} ${row.metric} more than the ${Math.max(row.available ?? 0, 0)} available (what is left of the included ${row.limit} plus a balance of ${row.balance}, less reservations); nothing was recorded.`;
  }
  return `Adding ${amount} ${row.metric} would exceed the limit of ${row.limit} in force (${row.used} used, reservations besides); nothing was recorded.`;
}

/** The counter against its limit in force; `overage` for a metric billed past it (§13), the balance for credits (§16.2). */
function answer(row: AppliedRow): UsageAnswer {
  const used = row.used!;
  const limit = row.limit!;
  return {
    metric: row.metric!,
    used,
    limit,
    at_capacity: used >= limit,
    ...(row.policy === 'bill' ? { overage: Math.max(used - limit, 0) } : {}),
    ...(row.policy === 'credits' ? { balance: row.balance!, available: row.available! } : {}),
    ...(row.expired ? { expired: true as const } : {}),
  };
}

function reservation(event: UsageEvent, row: AppliedRow): ReservationAnswer {
  return { id: row.holdId!, organisation_id: event.organisationId, metric: event.metric, amount: event.amount, expires_at: new Date(row.expiresAt!).toISOString() };
}

/** Splits before each event whose (organisation, key) an earlier event of the same run used. */
function runsWithoutRepeatedKeys(events: StatementEvent[]): StatementEvent[][] {
  const runs: StatementEvent[][] = [[]];
  let keys = new Set<string>();
  for (const event of events) {
    const key =
      'reservation' in event
        ? `commit ${event.reservation}`
        : event.idempotencyKey === undefined
          ? undefined
          : `${event.organisationId} ${'holdTtlS' in event ? 'hold ' : ''}${event.idempotencyKey}`;
    if (key !== undefined && keys.has(key)) {
      runs.push([]);
      keys = new Set();
    }
    if (key !== undefined) keys.add(key);
    runs[runs.length - 1].push(event);
  }
  return runs;
}
