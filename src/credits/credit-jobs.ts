import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { rolloversOf } from '../config/tiers';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { JobQueueTasks } from '../database/job-queue';
import { transaction } from '../database/transaction';
import { CreditsRepository } from './credits.repository';

/** The most grants one minutely step writes off (the rest: the next minute). */
const EXPIRIES_PER_MINUTE = 5000;
/** The organisations one minutely step looks at for rollovers; the next step goes on after the last. */
const ROLLOVERS_PER_MINUTE = 500;

/**
 * Credits on the job queue, when the tier table gives any metric the credits policy: the minutely step writes the
 * `expire` ledger entries of grants past their expiry (spec §16.1; expiry itself needs no job: every read, report
 * and check leaves such a grant out from its `expires_at` on; the job only makes the ledger say so), and makes the
 * rollover grants of organisations whose period has begun, a batch of them a minute, going round (credits.roll_over:
 * each once, whoever makes it).
 */
@Injectable()
export class CreditJobs implements OnModuleInit {
  private readonly logger = new Logger('Credits');
  /** The metrics some tier rolls over. */
  private readonly rollovers: string[];
  /** Where this instance's round of rollovers is (the last organisation looked at). */
  private rolloverCursor: string | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
    private readonly repository: CreditsRepository,
    @InjectDataSource() private readonly db: DataSource,
  ) {
    this.rollovers = [...new Set(Object.values(config.tiers).flatMap((plan) => Object.keys(rolloversOf(plan))))];
  }

  onModuleInit(): void {
    const credits = Object.values(this.config.tiers).some((plan) => Object.values(plan.metrics).some((rule) => rule.overage === 'credits'));
    if (!credits) return;
    this.queue.register({ tasks: {}, minutely: () => this.minutely().then(() => undefined) });
  }

  /** One minute's step: grants past their expiry written off, lapsed reservations marked, a batch of rollovers. */
  async minutely(): Promise<{ expired: number; rolledOver: number }> {
    const expired = await this.repository.expireGrants(EXPIRIES_PER_MINUTE);
    if (expired) this.logger.log(`credits: ${expired} grant(s) past their expiry written off`);
    const rolledOver = await this.rollOverBatch();
    if (rolledOver) this.logger.log(`credits: ${rolledOver} rollover grant(s) made`);
    return { expired, rolledOver };
  }

  /** The next ROLLOVERS_PER_MINUTE candidates' rollovers; after the last, the round starts again. */
  private async rollOverBatch(): Promise<number> {
    if (!this.rollovers.length) return 0;
    const organisations = await this.repository.rolloverCandidates(this.rollovers, this.rolloverCursor, ROLLOVERS_PER_MINUTE);
    this.rolloverCursor = organisations.length < ROLLOVERS_PER_MINUTE ? null : organisations[organisations.length - 1];
    let made = 0;
    for (const organisationId of organisations) made += await this.repository.rollOver(organisationId, this.config.notifyUrls);
    return made;
  }

  /**
   * sandbox:advance (spec §16.6): an organisation's credits as of its sandbox clock, `clock`, ahead of real time,
   * once its subscription's events (renewals) have been delivered: the rollovers of the period it is in now, then
   * its grants brought to the clock (CreditsRepository.bringToClock): started ones in effect, expired ones written off.
   */
  async bringToClock(organisationId: string, clock: Date): Promise<{ rolled_over: number; made_effective: number; expired: number }> {
    const rolledOver = await this.rollOver(organisationId);
    const { madeEffective, expired } = await transaction(this.db, (m) => this.repository.bringToClock(m, organisationId, clock));
    return { rolled_over: rolledOver, made_effective: madeEffective, expired };
  }

  /** One organisation's rollover grants of its current period (each once, whoever makes it): how many were made. */
  rollOver(organisationId: string): Promise<number> {
    return this.repository.rollOver(organisationId, this.config.notifyUrls);
  }
}
