import { Injectable, Logger } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { toErrorBody } from '../common/error.filter';
import { UsageBatchEvent, UsageBatchResult, UsageReportBody } from './licensing.dto';
import { LimitExceeded, UsageReport, UsageService } from './usage.service';

/**
 * Organisations whose events are applied at the same time, per batch. Events of one organisation go in
 * order, one after the other; different organisations share nothing a report locks, so applying them side
 * by side is the same as in order. Bounded so that one batch leaves pool connections to everyone else.
 */
const ORGANISATIONS_AT_ONCE = 4;

/**
 * Bulk usage (spec §13): each event goes through the single report's own path (`UsageService.record`: the
 * same statement, limit check, idempotency keys and capacity notifications), so a batch means exactly what
 * its events sent one by one would. Each event commits on its own; its result says what happened to it.
 */
@Injectable()
export class UsageBatchService {
  private readonly logger = new Logger('UsageBatch');

  constructor(private readonly usage: UsageService) {}

  async record(events: UsageBatchEvent[]): Promise<UsageBatchResult[]> {
    const results = new Array<UsageBatchResult>(events.length);
    const reports = await Promise.all(events.map(toReport));
    const byOrganisation = new Map<string, number[]>();
    events.forEach((event, i) => byOrganisation.set(event.organisation_id, [...(byOrganisation.get(event.organisation_id) ?? []), i]));
    const queue = [...byOrganisation.values()];
    const worker = async () => {
      for (let group = queue.shift(); group; group = queue.shift()) await this.applyInOrder(group, reports, results);
    };
    await Promise.all(Array.from({ length: Math.min(ORGANISATIONS_AT_ONCE, queue.length) }, worker));
    return results;
  }

  /**
   * One organisation's events, in order. A run of increases of one metric without keys is first tried as one
   * report of their sum: when the sum fits under the limit, every prefix of it does, so applying them one by
   * one (with nothing in between) would have accepted each, at the counter values derived below; and the
   * counter can only reach the limit at the run's last event, which is where one-by-one would have crossed
   * it (the same capacity message). When the sum does not fit, the run goes one by one.
   */
  private async applyInOrder(indices: number[], reports: Array<UsageReport | UsageBatchResult>, results: UsageBatchResult[]) {
    for (let k = 0; k < indices.length; ) {
      let end = k + 1;
      while (end < indices.length && mergeable(reports[indices[k]], reports[indices[end]])) end++;
      const run = indices.slice(k, end);
      if (run.length === 1 || !(await this.applySum(run.map((i) => reports[i] as UsageReport), run, results))) {
        for (const i of run) results[i] = await this.apply(reports[i]);
      }
      k = end;
    }
  }

  /** The run as one report of its sum; false (nothing applied) when that is not accepted. */
  private async applySum(run: UsageReport[], indices: number[], results: UsageBatchResult[]): Promise<boolean> {
    const sum = run.reduce((total, r) => total + r.amount, 0);
    const after = await this.usage.record({ ...run[0], amount: sum }).catch(() => undefined);
    if (!after) return false;
    let used = after.used - sum;
    run.forEach((r, j) => {
      used += r.amount;
      results[indices[j]] = { status: 200, used, limit: after.limit, at_capacity: used >= after.limit };
    });
    return true;
  }

  /** One event through the single report's path, its answer as a result instead of a throw. */
  private async apply(report: UsageReport | UsageBatchResult): Promise<UsageBatchResult> {
    if (!('organisationId' in report)) return report;
    try {
      const { used, limit, at_capacity } = await this.usage.record(report);
      return { status: 200, used, limit, at_capacity };
    } catch (err) {
      if (err instanceof LimitExceeded) return { ...refused(402, err.code), used: err.used, limit: err.limit, at_capacity: err.used >= err.limit };
      const { statusCode, code } = toErrorBody(err);
      // Nothing of this event committed (its statement or transaction failed); the others stand.
      if (statusCode >= 500) this.logger.error({ msg: 'usage batch: an event failed', err });
      return refused(statusCode, code);
    }
  }
}

/** The event as a report, checked with the single report's rules (UsageReportBody); else its 400 result. */
async function toReport(event: UsageBatchEvent): Promise<UsageReport | UsageBatchResult> {
  const errors = await validate(plainToInstance(UsageReportBody, { ...event }), { forbidUnknownValues: true });
  if (errors.length) return refused(400, 'validation_failed');
  return {
    organisationId: event.organisation_id,
    metric: event.metric as UsageReport['metric'],
    amount: event.amount,
    idempotencyKey: event.idempotency_key,
  };
}

/** Increases of the same metric, neither with a key (a key's answer is its own) nor a decrease (clamped at 0). */
const mergeable = (a: UsageReport | UsageBatchResult, b: UsageReport | UsageBatchResult) =>
  [a, b].every((r) => 'organisationId' in r && r.amount > 0 && r.idempotencyKey === undefined) &&
  (a as UsageReport).metric === (b as UsageReport).metric;

const refused = (status: number, code: string): UsageBatchResult => ({ status, used: null, limit: null, at_capacity: null, code });
