import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { AutoRechargeRecord } from '../credits/credits.dto';
import { CreditsService } from '../credits/credits.service';
import { transaction } from '../database/transaction';
import { IdentityService } from '../identity/identity.service';
import { PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { providerFailure } from '../provider/provider-failure';
import { AutoRechargeQuery, SaveAutoRechargeDto } from './auto-recharge.dto';

const noPaymentMethod = () =>
  new AppException('no_payment_method', "The organisation's customer has no default payment method to pay automatic top-ups with; buy a pack at checkout first, or set one in the billing portal.");

/**
 * The automatic top-up setting (spec §16.4): `PUT` and `DELETE /api/billing/credits/auto-recharge`, owner or
 * admin. Saving needs a metric whose policy is credits, a pack of that metric for sale, and a provider customer
 * with a default payment method (asked of the provider: what an off-session invoice is paid with). Each change is
 * audited in its transaction; a refused one changes nothing.
 */
@Injectable()
export class AutoRechargeService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly identity: IdentityService,
    private readonly credits: CreditsService,
    private readonly provider: PaymentProvider,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  async save(caller: AuthUser, by: AuditActor, dto: SaveAutoRechargeDto): Promise<AutoRechargeRecord> {
    await this.identity.requireMember(caller, dto.organisation_id);
    this.checkCreditsMetric(dto.metric);
    if (!Object.hasOwn(this.config.creditPacks, dto.pack)) {
      throw new AppException('invalid_pack', `There is no credit pack "${dto.pack.slice(0, 64)}"; GET /api/billing/plans lists them.`);
    }
    const pack = this.config.creditPacks[dto.pack];
    if (pack.metric !== dto.metric) throw new AppException('invalid_pack', `The credit pack ${dto.pack} is for ${pack.metric}, not ${dto.metric}.`);
    if (!this.config.providerPackPrices[dto.pack]?.[0] && this.provider.requiresPriceIds) {
      throw new AppException('pack_not_for_sale', `The credit pack ${dto.pack} has no price configured and cannot be bought.`);
    }
    await this.requirePaymentMethod(dto.organisation_id);
    return transaction(this.db, async (m) => {
      const before = await this.credits.autoRecharge(m, dto.organisation_id, dto.metric);
      const after = await this.credits.saveAutoRecharge(m, {
        organisationId: dto.organisation_id,
        metric: dto.metric,
        pack: dto.pack,
        threshold: dto.threshold,
        monthlyLimit: dto.monthly_limit,
      });
      await this.audit.record(m, by, { action: 'credit_auto_recharge.saved', organisationId: dto.organisation_id, before: before && { ...before }, after: { ...after } });
      return after;
    });
  }

  async remove(caller: AuthUser, by: AuditActor, query: AutoRechargeQuery): Promise<void> {
    await this.identity.requireMember(caller, query.organisation_id);
    this.checkCreditsMetric(query.metric);
    await transaction(this.db, async (m) => {
      const before = await this.credits.autoRecharge(m, query.organisation_id, query.metric);
      if (!before) return;
      await this.credits.deleteAutoRecharge(m, query.organisation_id, query.metric);
      await this.audit.record(m, by, { action: 'credit_auto_recharge.deleted', organisationId: query.organisation_id, before: { ...before } });
    });
  }

  /** 400 `invalid_credit_metric` unless some tier gives the metric the credits policy. */
  private checkCreditsMetric(metric: string): void {
    this.credits.checkMetric(metric);
    const credits = Object.values(this.config.tiers).some((plan) => Object.hasOwn(plan.metrics, metric) && plan.metrics[metric].overage === 'credits');
    if (!credits) throw new AppException('invalid_credit_metric', `No tier sells "${metric}" as credits; automatic top-ups are for credits metrics.`);
  }

  private async requirePaymentMethod(organisationId: string): Promise<void> {
    const customerId = await this.identity.customerOf(organisationId);
    if (!customerId) throw noPaymentMethod();
    let customer;
    try {
      customer = await this.provider.retrieveCustomer(customerId);
    } catch (err) {
      if (err instanceof PaymentProviderError && err.kind === 'not_found') throw noPaymentMethod();
      throw providerFailure(err);
    }
    if (!customer.defaultPaymentMethod) throw noPaymentMethod();
  }
}
