import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../config/app-config';
import { paidTiers } from '../config/tiers';
import { PaymentProvider, PaymentProviderError, PriceInfo } from './payment-provider.port';

/** A price as the plan list shows it (spec §11.2). */
export interface PlanPrice {
  id: string;
  interval: string;
  interval_count: number;
  /** Integer minor units; per seat for a per-seat tier. */
  unit_amount: number;
  /** Upper case, as every currency this API answers. */
  currency: string;
}

/** A credit pack's one-time price as the plan list shows it (spec §16.3): a tier's price without an interval. */
export interface PackPrice extends Omit<PlanPrice, 'interval' | 'interval_count'> {
  interval: null;
  interval_count: null;
}

/** What a price id is sold for: a tier's subscription (recurring) or a credit pack (one-time). */
type Sold = 'tier' | 'pack';

const REFRESH_MS = 60 * 60 * 1000;
/** After a refresh the provider could not answer (down, rate-limited): sooner than the hour. */
const RETRY_MS = 60 * 1000;

/**
 * The tiers' and credit packs' prices as the provider has them, read in the background: after the start and
 * every hour (sooner after a failure). A start never waits on the provider; until the first answer a tier or
 * pack lists no prices. A price the provider does not know, or that is inactive, or whose kind is not what it
 * sells (a tier's must be recurring, a pack's one-time), is logged at error level and left out; one the
 * provider could not be asked about keeps what the last refresh read. Each instance reads its own (a few
 * background-priority requests an hour).
 */
@Injectable()
export class PriceCatalog implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('PriceCatalog');
  private prices = new Map<string, PlanPrice>();
  private packPrices = new Map<string, PackPrice>();
  /** Each confirmed price's amount per currency it is sold in (its currency options, lower-case keys). */
  private amounts = new Map<string, Record<string, number | null>>();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly config: AppConfig,
    private readonly provider: PaymentProvider,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap() {
    // Only a serving instance shows plans: a CLI command's application context asks the provider nothing.
    if (!this.adapterHost.httpAdapter) return;
    void this.refresh();
  }

  // A read under way is not waited for: a hung provider would hold the shutdown for its timeouts, and a
  // read left unfinished loses nothing.
  onApplicationShutdown() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The tier's prices the provider confirmed, in the order PAYPROVIDER_PRICE_<TIER> lists them. */
  pricesOf(tier: string): PlanPrice[] {
    return this.provider.tierPriceIds(tier).flatMap((id) => this.prices.get(id) ?? []);
  }

  /** The tier's price with this interval, if the provider confirmed one. */
  priceFor(tier: string, interval: string): PlanPrice | undefined {
    return this.pricesOf(tier).find((p) => p.interval === interval);
  }

  /** The credit pack's prices the provider confirmed, in the order PAYPROVIDER_PRICE_PACK_<PACK> lists them. */
  packPricesOf(pack: string): PackPrice[] {
    return this.provider.packPriceIds(pack).flatMap((id) => this.packPrices.get(id) ?? []);
  }

  /**
   * The price as sold in `currency` (lower case): its currency option's amount, the currency upper case.
   * Undefined when the provider has no option of that currency for it, or one without a fixed amount.
   */
  inCurrency<P extends PlanPrice | PackPrice>(price: P, currency: string): P | undefined {
    const amount = this.amounts.get(price.id)?.[currency];
    return amount === undefined || amount === null ? undefined : { ...price, unit_amount: amount, currency: currency.toUpperCase() };
  }

  /**
   * Whether the provider sells this price in `currency` (lower case); undefined when the price was never read
   * (the provider then decides at the checkout).
   */
  sellsIn(priceId: string, currency: string): boolean | undefined {
    const amounts = this.amounts.get(priceId);
    return amounts && typeof amounts[currency] === 'number';
  }

  /** The paid tier that sells this price id, and the price's interval when the provider confirmed it. */
  planOfPrice(priceId: string): { tier: string; interval: string | null } | undefined {
    const tier = paidTiers(this.config.tiers).find((t) => this.provider.tierPriceIds(t).includes(priceId));
    return tier === undefined ? undefined : { tier, interval: this.prices.get(priceId)?.interval ?? null };
  }

  /** The refresh under way, if any (tests wait for the start's one before counting provider requests). */
  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Reads every tier's prices now (one refresh at a time), then schedules the next one. */
  refresh(): Promise<void> {
    this.running ??= this.readAll().finally(() => (this.running = undefined));
    return this.running;
  }

  private async readAll(): Promise<void> {
    clearTimeout(this.timer);
    const ids = [
      ...paidTiers(this.config.tiers).flatMap((tier) => this.provider.tierPriceIds(tier).map((id) => [id, 'tier'] as const)),
      ...Object.keys(this.config.creditPacks).flatMap((pack) => this.provider.packPriceIds(pack).map((id) => [id, 'pack'] as const)),
    ];
    const outcomes = await Promise.all(ids.map(([id, sold]) => this.read(id, sold)));
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh(), outcomes.includes('unanswered') ? RETRY_MS : REFRESH_MS);
    this.timer.unref();
  }

  private async read(id: string, sold: Sold): Promise<'read' | 'left out' | 'unanswered'> {
    let price: PriceInfo;
    try {
      price = await this.provider.retrievePrice(id);
    } catch (err) {
      if (err instanceof PaymentProviderError && err.kind === 'not_found') return this.leaveOut(id, 'the payment provider does not know this price');
      // Logged by the adapter; the last price read stays listed.
      return 'unanswered';
    }
    if (!price.active) return this.leaveOut(id, 'the price is inactive at the payment provider');
    const currency = price.currency.toUpperCase();
    this.amounts.set(id, price.currencyOptions);
    if (sold === 'pack') {
      // A pack is bought once, in a checkout of mode payment, which takes one-time prices only.
      if (price.recurring || price.unitAmount === null) return this.leaveOut(id, "a credit pack's price is not a one-time price with a fixed unit amount");
      this.packPrices.set(id, { id, interval: null, interval_count: null, unit_amount: price.unitAmount, currency });
      return 'read';
    }
    if (!price.recurring || price.unitAmount === null) {
      return this.leaveOut(id, 'the price is not a recurring price with a fixed unit amount');
    }
    const { interval, intervalCount } = price.recurring;
    this.prices.set(id, { id, interval, interval_count: intervalCount, unit_amount: price.unitAmount, currency });
    return 'read';
  }

  private leaveOut(priceId: string, reason: string): 'left out' {
    this.prices.delete(priceId);
    this.packPrices.delete(priceId);
    this.amounts.delete(priceId);
    this.logger.error({ msg: `plan list: price left out: ${reason}`, priceId });
    return 'left out';
  }
}
