import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { MeteredMetric } from '../config/tiers';
import { transaction } from '../database/transaction';
import { organisationNotFound } from '../identity/identity.service';
import { LicensingService } from './licensing.service';
import { UsageChange, UsageRepository } from './usage.repository';

export interface UsageReport extends UsageChange {
  idempotencyKey?: string;
}

export interface UsageResult {
  metric: MeteredMetric;
  used: number;
  limit: number;
  at_capacity: boolean;
}

const FOREIGN_KEY_VIOLATION = '23503';

/** Records usage reported by trusted back-ends, enforcing the limits in force. */
@Injectable()
export class UsageService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly usage: UsageRepository,
    private readonly licensing: LicensingService,
  ) {}

  async record(report: UsageReport): Promise<UsageResult> {
    if (report.metric === 'ai_tokens' && report.amount < 0) {
      throw new AppException('negative_amount', 'ai_tokens usage can only grow; amount must be positive.');
    }
    try {
      if (!report.idempotencyKey) return await this.add(this.db.manager, report);
      return await transaction(this.db, (m) => this.addOnce(m, report, report.idempotencyKey!));
    } catch (err) {
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw organisationNotFound(report.organisationId);
      throw err;
    }
  }

  /** The key row first, then the counter, in one transaction: a refusal rolls both back. */
  private async addOnce(m: EntityManager, report: UsageReport, key: string): Promise<UsageResult> {
    if (!(await this.usage.claimKey(m, report, key))) {
      const first = await this.usage.firstReport(m, report.organisationId, key);
      if (first.metric !== report.metric || first.amount !== report.amount) {
        throw new AppException('idempotency_key_reused', `Idempotency key "${key}" was already used for a different report.`);
      }
      return first.response as UsageResult;
    }
    const result = await this.add(m, report);
    await this.usage.saveResponse(m, report.organisationId, key, result);
    return result;
  }

  private async add(m: EntityManager, report: UsageReport): Promise<UsageResult> {
    const { metric, amount } = report;
    const row = await this.usage.add(report, m);
    if (row) return { metric, used: row.used, limit: row.limit, at_capacity: row.used >= row.limit };
    // Refused, or no such organisation: read why (404 from status) and say so.
    const { used, limit } = (await this.licensing.status(report.organisationId, null, m)).usage[metric];
    throw new LimitExceeded(used, limit, `Adding ${amount} ${metric} would exceed the limit of ${limit} in force (${used} used); nothing was recorded.`);
  }
}

/** A 402: the counter and the limit it was refused against travel with it (a batch result shows them). */
export class LimitExceeded extends AppException {
  constructor(
    readonly used: number,
    readonly limit: number,
    message: string,
  ) {
    super('limit_exceeded', message);
  }
}
