import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AppConfig } from '../config/app-config';
import { licenseArguments } from '../config/tiers';
import { JobQueueTasks } from '../database/job-queue';
import { transaction } from '../database/transaction';
import { PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { idOf } from '../provider/provider-event';
import { RequestPace, withRequestPace } from '../provider/request-pace';
import { TransactionStep } from './change-outcomes';
import { LicenseChanges } from './license-changes.port';
import { PlanVersionsService } from './plan-versions.service';
import { ClaimedItem, MigrationRead, PLAN_MIGRATION_TASK, PlanMigrationsRepository, RunningMigration } from './plan-migrations.repository';
import { MovingSubscription, SubscriptionsRepository } from './subscriptions.repository';
import { SubscriptionsService } from './subscriptions.service';
import { pricesByInterval } from './version-prices';

/** How long a run holds its migration, and a batch its subscriptions, between renewals: a stopped run's are free after this. */
const LEASE_S = 45;
/** Provider errors that may pass (unavailable, rate-limited, an outcome not known): tries of a subscription before it counts as failed. */
const MAX_ATTEMPTS = 5;
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What starts a migration: checked by the caller (PlansService.range). */
export interface MigrationStart {
  tier: string;
  fromVersion: number | null;
  toVersion: number;
  at: 'now' | 'period_end';
  actor: string;
  requestId: string | null;
}

/** The target version's price ids (and by interval, as the provider has them), and each version's of the tier. */
interface Targets {
  ids: string[];
  byInterval: Map<string, string>;
  prices: Map<number, string[]>;
}

/** A subscription's move, decided: what the provider is asked (if anything) and how its answer is recorded. */
type Outcome = { apply?: TransactionStep; price: { from: string; to: string } | null } | { refused: string };

/**
 * Plan migrations (spec §17): a tier's subscriptions moved to a plan version, each exactly once, on the job queue.
 *
 * The migration and one row per subscription are written when it starts; a job runs it on any instance, holding
 * the migration (a lease renewed per batch) so one instance at a time works on it, and claiming each batch of
 * subscriptions. Every provider request of the run keeps to PROVIDER_SYNC_MAX_RPS (one RequestPace for the
 * instance's migrations). A subscription whose version's prices differ from the target's is moved at the
 * provider: `now`, its item's price (no proration); `period_end`, a schedule's next phase (as 11.4's downgrade),
 * keeping a pending change of its own tier with the new price. Each request's Idempotency-Key is derived from the
 * migration and the subscription, and the provider's subscription is read first, so a run taken over after a
 * crash neither asks twice nor moves twice. The version is written, audited (`plan.migrated`) and the license
 * change told (license.updated) in the transaction that marks the subscription done.
 *
 * A run that stops (shutdown) lets go of the migration and queues its job again; one whose instance died leaves a
 * lease that runs out, and the minutely step queues a job for every running migration nobody holds.
 */
@Injectable()
export class PlanMigrationRuns implements OnModuleInit {
  private readonly logger = new Logger('PlanMigrations');
  private readonly pace: RequestPace;

  constructor(
    private readonly repository: PlanMigrationsRepository,
    private readonly versions: PlanVersionsService,
    private readonly subscriptions: SubscriptionsService,
    private readonly subscriptionRows: SubscriptionsRepository,
    private readonly provider: PaymentProvider,
    private readonly licenseChanges: LicenseChanges,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly queue: JobQueueTasks,
    @InjectDataSource() private readonly db: DataSource,
  ) {
    this.pace = new RequestPace(config.providerSyncMaxRps);
  }

  onModuleInit(): void {
    this.queue.register({
      tasks: { [PLAN_MIGRATION_TASK]: (payload, helpers) => this.run((payload as { migration_id: string }).migration_id, helpers.abortSignal) },
      minutely: async () => void (await this.repository.requeueUnheld()),
      started: async () => void (await this.repository.requeueUnheld()),
    });
  }

  /** Records the migration and its subscriptions and queues its run; undefined when one runs for the tier. */
  start(s: MigrationStart): Promise<{ id: string; total: number } | undefined> {
    return transaction(this.db, (m) => this.repository.create(m, { ...s, graceS: licenseArguments(this.config).graceS }));
  }

  read(id: string): Promise<MigrationRead | undefined> {
    return this.repository.read(id);
  }

  /** One run of the migration, until nothing is pending or the instance stops. */
  async run(id: string, stop?: AbortSignal): Promise<void> {
    let held = await this.repository.lease(id, LEASE_S, null);
    if (!held) return this.later(id);
    const migration: RunningMigration = held;
    const batch = Math.max(1, Math.min(50, this.pace.perSecond * 2));
    try {
      const targets = await this.targetPrices(migration);
      for (;;) {
        if (stop?.aborted) {
          await this.repository.release(id, held.leaseUntil);
          await this.repository.queue(id, new Date());
          return;
        }
        const items = await this.repository.claim(id, batch, LEASE_S);
        if (!items.length) {
          const status = await this.repository.finish(id);
          if (status) return void this.logger.log({ msg: 'plan migration finished', migration_id: id, status });
          // Others are claimed by a run that stopped, or wait for a retry: look again when their claims end.
          await sleep(1000);
        }
        await Promise.all(this.lanes(items, Math.min(8, batch)).map(async (lane) => {
          // A stopping instance ends with the subscription under way; release() frees the rest of the batch.
          for (const item of lane) if (!stop?.aborted) await this.moveOne(migration, item, targets);
        }));
        const renewed = await this.repository.lease(id, LEASE_S, held.leaseUntil);
        if (!renewed) return; // taken over (this run was too slow to renew): the other run goes on
        held = renewed;
      }
    } catch (err) {
      await this.repository.release(id, held.leaseUntil).catch(() => undefined);
      throw err;
    }
  }

  /** The migration is held by another run: its job comes back once that run's lease would have run out. */
  private async later(id: string): Promise<void> {
    const read = await this.repository.read(id);
    if (read?.status === 'running') await this.repository.queue(id, new Date(Date.now() + LEASE_S * 1000));
  }

  private lanes(items: ClaimedItem[], n: number): ClaimedItem[][] {
    const lanes: ClaimedItem[][] = Array.from({ length: n }, () => []);
    items.forEach((item, i) => lanes[i % n].push(item));
    return lanes.filter((l) => l.length);
  }

  /**
   * The tier's versions' price ids, and the target version's by interval as the provider has them. A price the
   * provider does not know is left out (the subscriptions of its interval are refused); one it could not be asked
   * about fails the run, which the job queue tries again later.
   */
  private async targetPrices(migration: RunningMigration): Promise<Targets> {
    const prices = new Map<number, string[]>();
    for (const v of await this.versions.all()) if (v.tier === migration.tier) prices.set(v.version, v.definition.prices ?? []);
    const ids = prices.get(migration.toVersion) ?? [];
    const byInterval = await pricesByInterval(this.provider, ids, (call) => withRequestPace(this.pace, call));
    return { ids, byInterval, prices };
  }

  /** One subscription: moved and recorded, refused and recorded, or left for a later try. */
  private async moveOne(migration: RunningMigration, item: ClaimedItem, targets: Targets): Promise<void> {
    const key = `plan-migration:${migration.id}:${item.subscriptionId}`;
    try {
      const sub = await this.subscriptionRows.moving(this.db.manager, item.subscriptionId);
      if (!sub || sub.deleted || sub.tier !== migration.tier) {
        return void (await this.refuse(migration, item, `The subscription is no longer one of the tier "${migration.tier}".`));
      }
      const fromPrices = (sub.planVersion !== null && targets.prices.get(sub.planVersion)) || [];
      const outcome =
        JSON.stringify(fromPrices) === JSON.stringify(targets.ids)
          ? { price: null }
          : await withRequestPace(this.pace, () => this.moveAtProvider(migration, item.subscriptionId, sub, targets.byInterval, key));
      if ('refused' in outcome) return void (await this.refuse(migration, item, outcome.refused));
      await this.record(migration, item, sub, outcome);
    } catch (err) {
      const e = err instanceof PaymentProviderError ? err : undefined;
      if (e && !e.outcomeUnknown && e.kind !== 'unavailable' && e.kind !== 'rate_limited') {
        return void (await this.refuse(migration, item, `The payment provider refused it: ${e.message}`));
      }
      const message = (err as Error).message;
      if (item.attempts + 1 >= MAX_ATTEMPTS) return void (await this.refuse(migration, item, `Not moved after ${MAX_ATTEMPTS} attempts: ${message}`));
      this.logger.warn({ msg: 'plan migration: a subscription will be tried again', migration_id: migration.id, subscription_id: item.subscriptionId, error: message });
      await this.repository.retryLater(migration.id, item.subscriptionId, message, Math.min(2 ** item.attempts * 2, 30));
    }
  }

  /**
   * The provider's subscription moved to the target version's price for its interval, unless it has it already
   * (a run before this one moved it, its answer lost): `now`, the item's price; `period_end`, the next phase.
   */
  private async moveAtProvider(
    migration: RunningMigration,
    subscriptionId: string,
    sub: MovingSubscription,
    byInterval: Map<string, string>,
    key: string,
  ): Promise<Outcome> {
    const object = await this.provider.retrieveSubscription(subscriptionId);
    const item = object.items?.data?.[0];
    const current = idOf(item?.price);
    const interval: string | undefined = item?.price?.recurring?.interval ?? sub.interval ?? undefined;
    const target = interval ? byInterval.get(interval) : undefined;
    if (!item?.id || !current) return { refused: 'The subscription has no item at the payment provider.' };
    if (!target) return { refused: `Version ${migration.toVersion} of "${migration.tier}" has no ${interval ?? 'recurring'} price.` };
    const price = { from: current, to: target };
    if (migration.at === 'now') {
      if (current === target) return { price };
      const answer = await this.provider.changeItemPrice(subscriptionId, { itemId: item.id, price: target }, key);
      const asOf = nowSeconds();
      return { price, apply: (m) => this.subscriptions.applyAnswer(m, sub.organisationId, answer, asOf) };
    }
    // It ends with its period: no next period to price (its version is moved all the same).
    if (sub.cancelAtPeriodEnd || object.cancel_at_period_end === true) return { price: null };
    const scheduleId = idOf(object.schedule) ?? null;
    let next = { price: target, quantity: item.quantity ?? 1 };
    const pending = scheduleId ? sub.pendingChange : null;
    if (pending && pending.tier !== migration.tier) {
      // The pending change moves it to another tier at the period's end (onto that tier's newest version): kept as it is.
      return { price: null };
    }
    if (pending) {
      const pendingPrice = pending.interval ? byInterval.get(pending.interval) : target;
      if (!pendingPrice) return { refused: `Version ${migration.toVersion} of "${migration.tier}" has no ${pending.interval} price for the pending change.` };
      next = { price: pendingPrice, quantity: pending.seats ?? next.quantity };
    } else if (current === target) {
      return { price };
    }
    const schedule = await this.provider.scheduleItemChange(subscriptionId, { scheduleId, next }, key);
    const asOf = nowSeconds();
    return { price: { from: current, to: next.price }, apply: (m) => this.subscriptions.applyScheduleAnswer(m, schedule, asOf) };
  }

  /** The move recorded: the provider's answer, the version, the audit and the license's news, with the row done. */
  private async record(migration: RunningMigration, item: ClaimedItem, sub: MovingSubscription, outcome: Exclude<Outcome, { refused: string }>): Promise<void> {
    await transaction(this.db, async (m) => {
      await this.subscriptions.lock(m, [sub.customerId ?? undefined, item.subscriptionId]);
      if (!(await this.repository.settle(m, migration.id, item.subscriptionId, 'done', null))) return;
      await outcome.apply?.(m);
      await this.subscriptionRows.moveVersion(m, item.subscriptionId, migration.tier, migration.toVersion, migration.at);
      await this.audit.record(m, { actor: migration.actor, requestId: migration.requestId }, {
        action: 'plan.migrated',
        organisationId: sub.organisationId,
        before: { subscription_id: item.subscriptionId, plan_version: sub.planVersion },
        after: {
          subscription_id: item.subscriptionId,
          plan_version: migration.toVersion,
          migration_id: migration.id,
          at: migration.at,
          effective_at: migration.at === 'now' ? nowSeconds() : sub.periodEnd,
          price: outcome.price,
        },
      });
      await this.licenseChanges.licenseMayHaveChanged(m, sub.organisationId);
    });
  }

  private async refuse(migration: RunningMigration, item: ClaimedItem, message: string): Promise<void> {
    this.logger.warn({ msg: 'plan migration: a subscription was not moved', migration_id: migration.id, subscription_id: item.subscriptionId, error: message });
    await transaction(this.db, (m) => this.repository.settle(m, migration.id, item.subscriptionId, 'failed', message));
  }
}
