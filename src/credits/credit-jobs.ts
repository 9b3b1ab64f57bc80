import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { JobQueueTasks } from '../database/job-queue';
import { CreditsRepository } from './credits.repository';

/** The most grants one minutely step writes off (the rest: the next minute). */
const EXPIRIES_PER_MINUTE = 5000;

/**
 * Credits on the job queue, when the tier table gives any metric the credits policy: the minutely step writes the
 * `expire` ledger entries of grants past their expiry (spec §16.1). Expiry itself needs no job: every read, report
 * and check leaves such a grant out from its `expires_at` on; the job only makes the ledger say so.
 */
@Injectable()
export class CreditJobs implements OnModuleInit {
  private readonly logger = new Logger('Credits');

  constructor(
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
    private readonly repository: CreditsRepository,
  ) {}

  onModuleInit(): void {
    const credits = Object.values(this.config.tiers).some((plan) => Object.values(plan.metrics).some((rule) => rule.overage === 'credits'));
    if (!credits) return;
    this.queue.register({ tasks: {}, minutely: () => this.minutely().then(() => undefined) });
  }

  /** One minute's step: grants past their expiry written off, lapsed reservations marked. */
  async minutely(): Promise<number> {
    const expired = await this.repository.expireGrants(EXPIRIES_PER_MINUTE);
    if (expired) this.logger.log(`credits: ${expired} grant(s) past their expiry written off`);
    return expired;
  }
}
