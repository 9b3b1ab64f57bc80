import { Injectable, Logger } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { toErrorBody } from '../common/error.filter';
import { UsageBatchEvent, UsageBatchResult, UsageReportBody } from './licensing.dto';
import { LimitExceeded, UsageService } from './usage.service';

/**
 * Organisations whose events are applied at the same time, per batch. Events of one organisation go in
 * order, one after the other; different organisations share nothing a report locks, so applying them side
 * by side is the same as in order. Bounded so that one batch leaves pool connections to everyone else.
 */
const ORGANISATIONS_AT_ONCE = 4;

/**
 * Bulk usage (SPEC 13): each event goes through the single report's own path (`UsageService.record`: the
 * same statement, limit check, idempotency keys and capacity notifications), so a batch means exactly what
 * its events sent one by one would. Each event commits on its own; its result says what happened to it.
 */
@Injectable()
export class UsageBatchService {
  private readonly logger = new Logger('UsageBatch');

  constructor(private readonly usage: UsageService) {}

  async record(events: UsageBatchEvent[]): Promise<UsageBatchResult[]> {
    const results = new Array<UsageBatchResult>(events.length);
    const byOrganisation = new Map<string, number[]>();
    events.forEach((event, i) => byOrganisation.set(event.organisation_id, [...(byOrganisation.get(event.organisation_id) ?? []), i]));
    const queue = [...byOrganisation.values()];
    const worker = async () => {
      for (let group = queue.shift(); group; group = queue.shift()) {
        for (const i of group) results[i] = await this.one(events[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(ORGANISATIONS_AT_ONCE, queue.length) }, worker));
    return results;
  }

  /** One event, with the single report's rules (UsageReportBody) and answer, as a result instead of a throw. */
  private async one(event: UsageBatchEvent): Promise<UsageBatchResult> {
    const errors = await validate(plainToInstance(UsageReportBody, { ...event }), { forbidUnknownValues: true });
    if (errors.length) return refused(400, 'validation_failed');
    try {
      const { used, limit, at_capacity } = await this.usage.record({
        organisationId: event.organisation_id,
        metric: event.metric as UsageReportBody['metric'],
        amount: event.amount,
        idempotencyKey: event.idempotency_key,
      });
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

const refused = (status: number, code: string): UsageBatchResult => ({ status, used: null, limit: null, at_capacity: null, code });
