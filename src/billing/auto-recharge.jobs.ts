import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { JobQueueTasks } from '../database/job-queue';
import { transaction } from '../database/transaction';
import { IdentityService } from '../identity/identity.service';
import { LicensingService } from '../licensing/licensing.service';
import { RechargeDue, UsageCommits } from '../licensing/usage-commits';
import { PaymentProvider, PaymentProviderError, RechargeCharge } from '../provider/payment-provider.port';
import { rechargeInvoiceMetadata } from './credit-purchases';

/** The job of one automatic top-up's purchase (payload `{recharge_id}`). */
export const RECHARGE_TASK = 'credits_recharge';
/**
 * Its tries: the queue waits e^n seconds after the n-th failure, so ten tries span about ten hours, well within the
 * 24 hours the provider keeps an idempotency key (a later try with the same keys could make a second invoice).
 */
const RECHARGE_ATTEMPTS = 10;

/**
 * Automatic top-ups on the job queue (spec §16.4), when the tier table sells credit packs. After a usage statement
 * commits, the organisations and metrics its accepted reports left below their thresholds get a pending recharge
 * and its job (one statement; none while one is in flight or the month's limit is reached); the report never
 * waits for it. The job buys the pack through the provider (PaymentProvider.chargeRecharge: every request keyed by
 * the recharge, so a retry, a restart or another instance charges once); the grant is made when the provider says
 * the invoice is paid (`invoice.paid`, the webhook's paid-invoice handlers). A declined payment settles the
 * recharge `failed`: the setting off with the error, and `credits.recharge_failed`. Other failures throw: the queue
 * tries again later, with the same keys.
 */
@Injectable()
export class AutoRechargeJobs implements OnModuleInit {
  private readonly logger = new Logger('AutoRecharge');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
    private readonly commits: UsageCommits,
    private readonly credits: CreditsService,
    private readonly identity: IdentityService,
    private readonly provider: PaymentProvider,
    private readonly licensing: LicensingService,
  ) {}

  onModuleInit(): void {
    if (!Object.keys(this.config.creditPacks).length) return;
    this.commits.onRechargeDue((due) => this.start(due));
    this.queue.register({
      tasks: {
        [RECHARGE_TASK]: async (payload, helpers) => {
          const rechargeId = (payload as { recharge_id: string }).recharge_id;
          try {
            await this.purchase(rechargeId, helpers.job.attempts === 1);
          } catch (err) {
            // The last try: the recharge failed (the setting off, credits.recharge_failed), no longer in flight.
            if (helpers.job.attempts < helpers.job.max_attempts) throw err;
            const error = `the payment provider could not be reached: ${err instanceof Error ? err.message : String(err)}`;
            await transaction(this.db, (m) => this.credits.settleRecharge(m, rechargeId, { status: 'failed', error }));
          }
        },
      },
    });
  }

  /** Pending recharges (with their jobs) for what the reports made due; their ids. */
  async start(due: RechargeDue[]): Promise<string[]> {
    const made = await this.credits.startRecharges(due, RECHARGE_TASK, RECHARGE_ATTEMPTS);
    if (made.length) this.logger.log(`credits: ${made.length} automatic top-up(s) started`);
    return made;
  }

  /**
   * One recharge's purchase: nothing when it is no longer pending (settled by an event, or a run before this one),
   * nor when its setting was removed or turned off meanwhile (the recharge then `failed`, quietly). On its first
   * try (`firstTry`: nothing asked of the provider yet), nothing either when the metric's `available` is no longer
   * below the threshold: a recharge paid after the report that made this one due (the report's statement read the
   * balance before that grant, and the start came after the other recharge had settled) already covered it.
   */
  async purchase(rechargeId: string, firstTry = true): Promise<void> {
    const recharge = await this.credits.findRecharge(this.db.manager, rechargeId);
    if (!recharge || recharge.status !== 'pending') return;
    const setting = await this.credits.autoRecharge(this.db.manager, recharge.organisationId, recharge.metric);
    // Removed or turned off since the report made it due, or no longer due: nothing is bought.
    if (!setting?.enabled || (firstTry && (await this.licensing.check(recharge.organisationId, null, recharge.metric, setting.threshold)).allowed)) {
      await transaction(this.db, (m) => this.credits.abandonRecharge(m, rechargeId));
      return;
    }
    const customerId = await this.identity.customerOf(recharge.organisationId);
    let charge: RechargeCharge;
    if (!customerId) {
      charge = { invoiceId: '', paid: false, error: 'the organisation has no customer at the payment provider' };
    } else {
      try {
        charge = await this.provider.chargeRecharge({
          rechargeId,
          customerId,
          pack: recharge.pack,
          priceId: this.config.providerPackPrices[recharge.pack]?.[0],
          metadata: rechargeInvoiceMetadata({ organisationId: recharge.organisationId, pack: recharge.pack, rechargeId }),
        });
      } catch (err) {
        // Refused for good (an unknown customer or price, a bad request): the recharge failed. Else: the queue's retry.
        if (!(err instanceof PaymentProviderError && (err.kind === 'rejected' || err.kind === 'not_found'))) throw err;
        charge = { invoiceId: '', paid: false, error: err.message };
      }
    }
    await transaction(this.db, async (m) => {
      if (charge.invoiceId) await this.credits.setRechargeInvoice(m, rechargeId, charge.invoiceId);
      if (!charge.paid) await this.credits.settleRecharge(m, rechargeId, { status: 'failed', error: charge.error, invoiceId: charge.invoiceId || undefined });
    });
    if (!charge.paid) this.logger.warn({ msg: 'automatic top-up failed; the setting is off until saved again', rechargeId, organisationId: recharge.organisationId, error: charge.error });
  }
}
