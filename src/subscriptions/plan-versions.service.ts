import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { PaymentProvider } from '../provider/payment-provider.port';
import { tableDefinitions } from './plan-definition';
import { PlanVersion } from './plan-version.entity';
import { PlanVersionsRepository, RecordedVersion } from './plan-versions.repository';

/**
 * The plan versions (spec §17): at the start of a serving instance, each tier's definition in the tier table (and
 * the price ids that sell it) is recorded as the tier's next version when it differs from its newest. Instances
 * starting together take turns on one lock, so a change is recorded once. The CLI records nothing: its table is
 * the one the next start will bring.
 */
@Injectable()
export class PlanVersionsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('PlanVersions');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repository: PlanVersionsRepository,
    private readonly config: AppConfig,
    private readonly provider: PaymentProvider,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.adapterHost.httpAdapter) return;
    for (const { tier, version } of await this.record()) this.logger.log({ msg: 'plan version recorded', tier, version });
  }

  /** Records the table's definitions that differ from their tier's newest version; answers those recorded. */
  record(): Promise<RecordedVersion[]> {
    const definitions = tableDefinitions(this.config.tiers, (tier) => this.provider.tierPriceIds(tier));
    return transaction(this.db, (m) => this.repository.record(m, definitions));
  }

  /** Every version recorded, by tier and version. */
  all(): Promise<PlanVersion[]> {
    return this.repository.all(this.db.manager);
  }
}
