import { Injectable } from '@nestjs/common';
import { validateSync } from 'class-validator';
import { toErrorBody } from '../common/error.filter';
import { UsageBatchEvent, UsageBatchResult, UsageReportBody } from './licensing.dto';
import { LimitExceeded } from './usage-errors';
import { checkEvent, UsageEvent, UsageOutcome, UsageService } from './usage.service';

/**
 * Bulk usage (spec §13): the well-formed events go through the single report's statement together
 * (UsageService.apply: in order, each with the single report's limit check, idempotency keys and capacity
 * notifications), so a batch means exactly what its events sent one by one would; an event refused before
 * (its values) or by the statement fails alone.
 */
@Injectable()
export class UsageBatchService {
  constructor(private readonly usage: UsageService) {}

  async record(events: UsageBatchEvent[]): Promise<UsageBatchResult[]> {
    const checked = events.map((event) => toEvent(event, this.usage));
    const valid = checked.filter((c): c is UsageEvent => 'organisationId' in c);
    const outcomes = (await this.usage.apply(valid)).values();
    return checked.map((c) => ('organisationId' in c ? toResult(outcomes.next().value!) : c));
  }
}

/**
 * The event as a report, checked with the single report's rules (UsageReportBody); else its 400 result.
 * Synchronous, on a plain copy (the batch step measured ~25 against ~55–85 µs per event through
 * plainToInstance and the asynchronous validate).
 */
function toEvent(event: UsageBatchEvent, table: { metrics: readonly string[]; perPeriod: readonly string[] }): UsageEvent | UsageBatchResult {
  const errors = validateSync(Object.assign(new UsageReportBody(), event), { forbidUnknownValues: true });
  if (errors.length) return refused(400, 'validation_failed');
  const report: UsageEvent = {
    organisationId: event.organisation_id,
    metric: event.metric,
    amount: event.amount,
    idempotencyKey: event.idempotency_key,
  };
  try {
    checkEvent(report, table);
  } catch (err) {
    return refused(400, toErrorBody(err).code);
  }
  return report;
}

function toResult(outcome: UsageOutcome): UsageBatchResult {
  if ('answer' in outcome) return { status: 200, ...withoutMetric(outcome.answer) };
  if (!('error' in outcome)) throw new Error('a batch holds reports only');
  const { error } = outcome;
  if (error instanceof LimitExceeded) return { status: 402, ...withoutMetric(error.counter), code: error.code };
  return refused(outcome.status, error.code);
}

const withoutMetric = <T extends { metric: unknown }>({ metric: _metric, ...rest }: T) => rest;

const refused = (status: number, code: string): UsageBatchResult => ({ status, used: null, limit: null, at_capacity: null, code });
