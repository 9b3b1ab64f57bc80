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
  /** Each tier's price ids that resolve to it (spec §5, §17): the table's, then those only older versions name. */
  private resolving: Record<string, string[]>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repository: PlanVersionsRepository,
    private readonly config: AppConfig,
    private readonly provider: PaymentProvider,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.resolving = config.providerPrices;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.adapterHost.httpAdapter) {
      for (const { tier, version } of await this.record()) this.logger.log({ msg: 'plan version recorded', tier, version });
    }
    this.resolving = resolvingPrices(this.config.providerPrices, await this.all());
  }

  /**
   * Each tier's price ids that resolve to it (spec §17: a price id of any version still resolves to its tier): the
   * table's PAYPROVIDER_PRICE_<TIER>, then the ids only an older version of the tier names (an id the table now
   * gives another tier resolves to that one). Known once the instance has started.
   */
  tierPrices(): Record<string, string[]> {
    return this.resolving;
  }

  /**
   * Records the table's definitions that differ from their tier's newest version; answers those recorded. A
   * subscription stored before its tier had any version is on its tier's first.
   */
  record(): Promise<RecordedVersion[]> {
    const definitions = tableDefinitions(this.config.tiers, (tier) => this.provider.tierPriceIds(tier));
    return transaction(this.db, (m) => this.repository.record(m, definitions));
  }

  /** Every version recorded, by tier and version. */
  all(): Promise<PlanVersion[]> {
    return this.repository.all(this.db.manager);
  }

  /** One version of a tier, if recorded. */
  async one(tier: string, version: number): Promise<PlanVersion | undefined> {
    return (await this.repository.one(this.db.manager, tier, version)) ?? undefined;
  }
}

/** The table's price ids of each tier, then those of its versions that the table no longer gives any tier. */
export function resolvingPrices(table: Record<string, string[]>, versions: Pick<PlanVersion, 'tier' | 'definition'>[]): Record<string, string[]> {
  const configured = new Set(Object.values(table).flat());
  const prices: Record<string, string[]> = Object.fromEntries(Object.entries(table).map(([tier, ids]) => [tier, [...ids]]));
  for (const { tier, definition } of versions) {
    for (const id of definition.prices ?? []) {
      if (configured.has(id)) continue;
      configured.add(id);
      (prices[tier] ??= []).push(id);
    }
  }
  return prices;
}
