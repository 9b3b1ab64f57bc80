import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { TierTable } from '../config/tiers';
import { transaction } from '../database/transaction';
import { IdentityService } from '../identity/identity.service';
import { CallerLimits } from '../provider/caller-limits';
import { PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { PriceCatalog } from '../provider/price-catalog';
import { idOf } from '../provider/provider-event';
import { changeFailure } from '../provider/provider-failure';
import { SubscriptionChangeOutcomes, TransactionStep } from './change-outcomes';
import { ExpectedSubscription } from './subscription-change-claim.entity';
import { PlanVersionsService } from './plan-versions.service';
import { Claim, SubscriptionClaims } from './subscription-claims';
import { ChangeSubscriptionDto, PreviewChangeDto, PreviewResponse, SubscriptionResponse, SubscriptionView, subscriptionView } from './subscription.dto';
import { checkRequest, isUpgrade, Plan, samePlan, targetPlan, usersLimit } from './subscription-plan';
import { LiveSubscription, SubscriptionsService } from './subscriptions.service';
import { pricesByInterval } from './version-prices';

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A change planned from the stored subscription and the request: what to ask the provider for. */
interface PlannedChange {
  live: LiveSubscription;
  from: Plan;
  to: Plan;
  upgrade: boolean;
  priceId: string;
}

/** A change to make at the provider: what it asks for, how its answer is recorded, and what it then shows. */
interface ProviderChange {
  /** The audit log's action. */
  action: string;
  /** The subscription once the provider has made it (how a webhook shows a change whose answer never came). */
  expect: ExpectedSubscription;
  /**
   * The provider's calls; the same `key` again asks them again under the same idempotency keys, and gets the
   * provider's answers to the first. Answers the step that records the change. Provider errors pass unmapped.
   */
  make(key: string): Promise<TransactionStep>;
}

/**
 * The organisation's subscription and its changes (spec §11.4). Reads need membership, changes owner or admin
 * (the route's declaration). Each change is made at the provider first; its answer is then applied at once as
 * the subscription's newest state (SubscriptionsService.applyAnswer, as the webhook's tie rule), audited, in one
 * transaction. One change per organisation at a time (SubscriptionClaims): a second waits, then starts from the
 * first one's result. Money is the provider's: previews are its invoice previews.
 */
@Injectable()
export class SubscriptionChangesService {
  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly subscriptions: SubscriptionsService,
    private readonly catalog: PriceCatalog,
    private readonly versions: PlanVersionsService,
    private readonly claims: SubscriptionClaims,
    private readonly outcomes: SubscriptionChangeOutcomes,
    private readonly audit: AuditService,
    private readonly callerLimits: CallerLimits,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async read(caller: AuthUser, organisationId: string): Promise<SubscriptionResponse> {
    await this.identity.requireMember(caller, organisationId);
    return { subscription: await this.view(this.db.manager, organisationId) };
  }

  async preview(caller: AuthUser, dto: PreviewChangeDto): Promise<PreviewResponse> {
    await this.identity.requireMember(caller, dto.organisation_id);
    checkRequest(this.config.tiers, dto);
    const planned = await this.planChange(dto);
    this.callerLimits.take(caller.id);
    const prorationDate = nowSeconds();
    const invoice = await (async () => {
      const itemId = await this.itemOf(planned.live.id);
      const when = planned.upgrade ? 'now' : 'period_end';
      return this.provider.previewItemChange(planned.live.id, { itemId, item: { price: planned.priceId, quantity: planned.to.seats }, prorationDate, when });
    })().catch((err: unknown) => {
      throw changeFailure(err);
    });
    return {
      amount_due: invoice.amountDue,
      currency: invoice.currency.toUpperCase(),
      proration_date: prorationDate,
      effective_at: planned.upgrade ? prorationDate : (planned.live.periodEnd ?? prorationDate),
      lines: invoice.lines.map((l) => ({ description: l.description, amount: l.amount, period_start: l.periodStart, period_end: l.periodEnd })),
    };
  }

  /** An upgrade now (prorated, invoiced at once); a downgrade at the period's end, through a schedule. */
  async change(caller: AuthUser, dto: ChangeSubscriptionDto, by: AuditActor): Promise<SubscriptionResponse> {
    await this.identity.requireMember(caller, dto.organisation_id);
    checkRequest(this.config.tiers, dto);
    return this.claims.during(dto.organisation_id, async (claim) => {
      const planned = await this.planChange(dto);
      const { live } = planned;
      this.callerLimits.take(caller.id);
      const { to } = planned;
      const item = { price: planned.priceId, quantity: to.seats };
      const action = 'subscription.changed';
      if (!planned.upgrade) {
        await this.capMembers(live.organisationId, to, claim);
        return this.carryOut(live, by, claim, {
          action,
          expect: { pending_change: { tier: to.tier, interval: to.interval, seats: to.seats } },
          make: async (key) => {
            const schedule = await this.provider.scheduleItemChange(live.id, { scheduleId: live.scheduleId, next: item }, key);
            const asOf = nowSeconds();
            return (m) => this.subscriptions.applyScheduleAnswer(m, schedule, asOf);
          },
        });
      }
      // A pending downgrade would still come at the period's end: the upgrade replaces it.
      return this.carryOut(live, by, claim, {
        action,
        expect: { tier: to.tier, interval: to.interval, seats: to.seats, pending_change: null },
        make: (key) =>
          this.afterRelease(live, by, claim, key, async (applyRelease) => {
            const itemId = await this.itemOf(live.id);
            const answer = await this.provider.changeItemNow(live.id, { itemId, item, prorationDate: dto.proration_date }, key);
            if (answer.pending_update) {
              // pending_if_incomplete: the payment failed and the provider left the subscription as it was.
              throw new AppException('payment_failed', 'The payment for this change failed; the plan in force stays as it was. Update the payment method and try again.');
            }
            const asOf = nowSeconds();
            return async (m) => {
              await applyRelease(m);
              await this.subscriptions.applyAnswer(m, live.organisationId, answer, asOf);
            };
          }),
      });
    });
  }

  cancel(caller: AuthUser, organisationId: string, by: AuditActor): Promise<SubscriptionResponse> {
    return this.setCancel(caller, organisationId, by, true);
  }

  resume(caller: AuthUser, organisationId: string, by: AuditActor): Promise<SubscriptionResponse> {
    return this.setCancel(caller, organisationId, by, false);
  }

  /** Releases the schedule that holds a change for the period's end: the subscription stays as it is. */
  async releasePendingChange(caller: AuthUser, organisationId: string, by: AuditActor): Promise<void> {
    await this.identity.requireMember(caller, organisationId);
    await this.claims.during(organisationId, async (claim) => {
      const live = await this.requireLive(organisationId);
      if (!live.scheduleId) throw new AppException('no_pending_change', 'The subscription has no change scheduled for the end of its period.');
      this.callerLimits.take(caller.id);
      const scheduleId = live.scheduleId;
      await this.carryOut(live, by, claim, {
        action: 'subscription.pending_change_released',
        expect: { pending_change: null },
        make: async (key) => {
          const released = await this.provider.releaseSchedule(scheduleId, key);
          const asOf = nowSeconds();
          return (m) => this.subscriptions.applyScheduleAnswer(m, released, asOf);
        },
      });
    });
  }

  private async setCancel(caller: AuthUser, organisationId: string, by: AuditActor, cancel: boolean): Promise<SubscriptionResponse> {
    await this.identity.requireMember(caller, organisationId);
    return this.claims.during(organisationId, async (claim) => {
      const live = await this.requireLive(organisationId);
      if (live.cancelAtPeriodEnd === cancel) {
        throw new AppException('no_change', cancel ? 'The subscription already ends with its period.' : 'The subscription is not set to end with its period.');
      }
      this.callerLimits.take(caller.id);
      // The provider leaves a scheduled subscription's cancellation to its schedule: a cancellation replaces the
      // change the schedule holds (a resumed subscription has none: the cancellation released it).
      return this.carryOut(live, by, claim, {
        action: cancel ? 'subscription.cancel_scheduled' : 'subscription.resumed',
        expect: { cancel_at_period_end: cancel },
        make: (key) =>
          this.afterRelease(live, by, claim, key, async (applyRelease) => {
            const answer = await this.provider.setCancelAtPeriodEnd(live.id, cancel, key);
            const asOf = nowSeconds();
            return async (m) => {
              await applyRelease(m);
              await this.subscriptions.applyAnswer(m, organisationId, answer, asOf);
            };
          }),
      });
    });
  }

  /**
   * Makes the change at the provider and records its answer. When the provider does not answer in time, the
   * change may still be made there: the claim is kept for its outcome, which the provider's answer (asked for
   * again under the same key) or its webhook settles (SubscriptionChangeOutcomes), and the caller is told so
   * (504 provider_timeout), never that nothing changed.
   */
  private async carryOut(live: LiveSubscription, by: AuditActor, claim: Claim, change: ProviderChange): Promise<SubscriptionResponse> {
    const key = randomUUID();
    let apply: TransactionStep;
    try {
      apply = await change.make(key);
    } catch (err) {
      if (!(err instanceof PaymentProviderError && err.outcomeUnknown)) throw changeFailure(err);
      const before = { subscription: await this.view(this.db.manager, live.organisationId) };
      const awaited = { ...by, action: change.action, subscriptionId: live.id, customerId: live.customerId, before, expect: change.expect };
      const claimId = await claim.awaitOutcome(awaited);
      this.outcomes.followUp(live.organisationId, claimId, awaited, () => change.make(key));
      throw new AppException(
        'provider_timeout',
        'The payment provider did not answer in time: the change may have been applied, and will show within minutes. Do not repeat it meanwhile.',
      );
    }
    return this.record(live, by, change.action, claim, apply);
  }

  /**
   * Releases the subscription's schedule first, when it has one, then runs `next` with the release to apply
   * in its transaction. A release the provider made stays recorded (and audited) when `next` then fails; one
   * whose next step's outcome is not known yet is recorded with that step.
   */
  private async afterRelease(
    live: LiveSubscription,
    by: AuditActor,
    claim: Claim,
    key: string,
    next: (applyRelease: TransactionStep) => Promise<TransactionStep>,
  ): Promise<TransactionStep> {
    const scheduleId = live.scheduleId;
    if (!scheduleId) return next(async () => undefined);
    const released = await this.provider.releaseSchedule(scheduleId, key);
    const asOf = nowSeconds();
    const applyRelease: TransactionStep = (m) => this.subscriptions.applyScheduleAnswer(m, released, asOf);
    try {
      return await next(applyRelease);
    } catch (err) {
      if (!(err instanceof PaymentProviderError && err.outcomeUnknown)) await this.record(live, by, 'subscription.pending_change_released', claim, applyRelease);
      throw err;
    }
  }

  /**
   * The change a request asks for, from the organisation's live subscription: 404 without one; 400 for a tier,
   * interval or seat count it cannot have, or the plan it has already; 409 for fewer seats (or a tier with a
   * lower users limit) than members.
   * The request's own mistakes were answered before (checkRequest).
   */
  private async planChange(dto: PreviewChangeDto): Promise<PlannedChange> {
    const live = await this.requireLive(dto.organisation_id);
    const tiers = this.config.tiers;
    const currentTier = live.tier && Object.hasOwn(tiers, live.tier) ? live.tier : undefined;
    if (!currentTier) throw new AppException('provider_error', 'The subscription\'s tier is not one of the tier table; change it at the provider.');
    const interval = live.interval ?? this.catalog.pricesOf(currentTier)[0]?.interval ?? 'month';
    const from = { tier: currentTier, interval, seats: live.seats ?? 1 };
    const members = await this.identity.memberCount(dto.organisation_id);
    const to = targetPlan(tiers, { ...from, perSeat: tiers[currentTier].perSeat }, dto, members);
    const priceId = to.tier === currentTier ? await this.versionPrice(live, currentTier, to.interval) : this.catalog.priceFor(to.tier, to.interval)?.id;
    if (!priceId) throw new AppException('price_not_found', `The tier ${to.tier} has no ${to.interval}ly price.`);
    if (samePlan(from, to)) throw new AppException('no_change', 'The subscription already has this plan.');
    checkMembers(tiers, to, members);
    return { live, from, to, upgrade: isUpgrade(tiers, from, to), priceId };
  }

  /**
   * The price of a change within the subscription's tier (seats, interval): its own plan version's, which such a
   * change keeps (spec §17), for the interval, as the provider describes the version's prices. A version that
   * sells what the tier table sells now is the catalog's (asks the provider nothing); a subscription of before
   * plan versions has the table's.
   */
  private async versionPrice(live: LiveSubscription, tier: string, interval: string): Promise<string | undefined> {
    const version = live.planVersion === null ? undefined : await this.versions.one(tier, live.planVersion);
    const prices = version?.definition.prices;
    if (!prices || JSON.stringify(prices) === JSON.stringify(this.provider.tierPriceIds(tier))) return this.catalog.priceFor(tier, interval)?.id;
    const byInterval = await pricesByInterval(this.provider, prices).catch((err: unknown) => {
      throw changeFailure(err);
    });
    return byInterval.get(interval);
  }

  /**
   * A downgrade is refused at no period's end (spec §11.4): from before the provider is asked, member additions
   * are held to the users limit it puts in force, counted under the lock additions take (the claim's cap, then
   * the pending change it records), so no addition slips in between the count and the change.
   */
  private async capMembers(organisationId: string, to: Plan, claim: Claim): Promise<void> {
    await transaction(this.db, async (m) => {
      checkMembers(this.config.tiers, to, await this.identity.lockedMemberCount(m, organisationId));
      await claim.cap(m, usersLimit(this.config.tiers, to));
    });
  }

  private async requireLive(organisationId: string): Promise<LiveSubscription> {
    const live = await this.subscriptions.liveOf(this.db.manager, organisationId);
    if (!live) throw new AppException('no_subscription', 'The organisation has no live subscription.');
    return live;
  }

  /** The subscription's item the change replaces: the provider's (our rows do not keep item ids). */
  private async itemOf(subscriptionId: string): Promise<string> {
    const sub = await this.provider.retrieveSubscription(subscriptionId);
    const itemId = idOf(sub.items?.data?.[0]?.id);
    if (!itemId) throw new AppException('provider_error', 'The subscription has no item at the payment provider.');
    return itemId;
  }

  /**
   * Applies a change the provider accepted (`apply`), under the subscription's lock (its webhook events'),
   * audits it with the subscription before and after, and ends the claim (`end`), in one transaction; answers
   * the subscription as it is now.
   */
  private async record(live: LiveSubscription, by: AuditActor, action: string, claim: Claim, apply: TransactionStep): Promise<SubscriptionResponse> {
    const { organisationId } = live;
    return transaction(this.db, async (m) => {
      await this.subscriptions.lock(m, [live.customerId ?? undefined, live.id]);
      const before = await this.view(m, organisationId);
      await apply(m);
      const after = await this.view(m, organisationId);
      await this.audit.record(m, by, { action, organisationId, before: { subscription: before }, after: { subscription: after } });
      await claim.end(m);
      return { subscription: after };
    });
  }

  private async view(m: EntityManager, organisationId: string): Promise<SubscriptionView | null> {
    const live = await this.subscriptions.liveOf(m, organisationId);
    return live ? subscriptionView(live) : null;
  }
}

/** 409 when the plan's users limit (its seats, or its tier's own) leaves members without a place. */
function checkMembers(tiers: TierTable, to: Plan, members: number): void {
  const limit = usersLimit(tiers, to);
  if (members <= limit) return;
  const plan = tiers[to.tier].perSeat ? `${to.seats} seats` : `the tier ${to.tier}, which allows ${limit} users`;
  throw new AppException('seats_below_members', `The organisation has ${members} members, more than ${plan}: remove members first.`);
}
