import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import { isPaidTier, paidTiers } from '../config/tiers';
import { PaymentProviderError } from '../provider/payment-provider.port';
import { nowSeconds, SandboxPlan } from './provider-events';
import { portalTakesNow } from './sandbox-billing';
import { SandboxDelivery } from './sandbox-delivery';
import { ChangeForm, ConfirmChangeForm, PortalQuery } from './sandbox-forms';
import { expired, notFound, SandboxHttp } from './sandbox-http';
import { deliveryFailedPage, messagePage } from './sandbox-pages';
import { cancelNowPage, changeReviewPage, portalPage, PortalOutcome, PortalReview } from './sandbox-portal-page';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { clockOf, SandboxSubscriptions } from './sandbox-subscriptions';
import { SandboxStore } from './sandbox.store';

const PORTAL_ID = /^bps_[A-Za-z0-9]{1,100}$/;
const SUBSCRIPTION_ID = /^sub_[A-Za-z0-9_]{1,100}$/;
const PORTAL_ACTIONS = ['cancel', 'resume', 'cancel-now', 'release'] as const;
type PortalAction = (typeof PORTAL_ACTIONS)[number];
const ACTION_OUTCOME: Record<PortalAction, PortalOutcome> = { cancel: 'canceled', resume: 'resumed', 'cancel-now': 'ended', release: 'released' };

/** What a portal form asks to change to, checked against the live subscription, and when the change would hold. */
interface AskedChange {
  current: SandboxPlan;
  next: SandboxPlan;
  when: 'now' | 'period_end';
  trialing: boolean;
}

/**
 * The sandbox provider's hosted billing portal. Public, like the checkout: access is by the unguessable portal
 * session id in the URL. Looking is a GET and changes nothing (the review of a change, the question before
 * "Cancel now"); every change is a POST of a confirmation and comes back to the portal with the new state.
 */
@ApiExcludeController()
@Public()
@Controller('sandbox/portal')
export class SandboxPortalController {
  constructor(
    private readonly store: SandboxStore,
    private readonly subscriptions: SandboxSubscriptions,
    private readonly delivery: SandboxDelivery,
    private readonly http: SandboxHttp,
    private readonly config: AppConfig,
  ) {}

  @Get(':id')
  async portal(@Param('id') id: string, @Query() query: PortalQuery, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const subs = await Promise.all(
      (await this.store.liveSubscriptions(portal.customerId)).map(async (sub) => ({
        sub,
        today: clockOf(sub),
        pending: sub.scheduleId ? await this.store.findSchedule(sub.scheduleId) : undefined,
      })),
    );
    const customer = await this.store.findCustomer(portal.customerId);
    const card = customer && { paymentMethod: customer.defaultPaymentMethod, declineNext: customer.declineNextCharge };
    return this.http.send(res, 200, portalPage(portal, subs, this.http.offers(), query.done, card));
  }

  /** The customer's next automatic charge (an automatic top-up's invoice) is declined, once: to try the failure path. */
  @Post(':id/decline-next-charge')
  async declineNextCharge(@Param('id') id: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    await this.store.declineNextCharge(portal.customerId);
    return this.http.redirect(res, `/sandbox/portal/${portal.id}?done=declining`);
  }

  /** The review of a change: the provider's preview of what it charges now, or from when it holds. Changes nothing. */
  @Get(':id/subscriptions/:sub/change')
  async reviewChange(@Param('id') id: string, @Param('sub') sub: string, @Query() form: ChangeForm, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const change = await this.askedChange(portal, sub, form, res);
    if (!change) return;
    const review = await this.review(sub, change);
    if (typeof review === 'string') return this.nothingChanged(res, portal, review);
    return this.http.send(res, 200, changeReviewPage(portal, sub, review, this.http.offers()));
  }

  /**
   * Makes a reviewed change: now (prorated as of the review's proration date) when any part is bigger, else at the
   * period's end. When the subscription changed since the review (the change would now hold at another time, or
   * charge another amount), nothing changes and the review is shown again with what holds now.
   */
  @Post(':id/subscriptions/:sub/change')
  async change(@Param('id') id: string, @Param('sub') sub: string, @Body() form: ConfirmChangeForm, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const change = await this.askedChange(portal, sub, form, res);
    if (!change) return;
    const { next, when } = change;
    const reviewAgain = async () => {
      const review = await this.review(sub, change);
      if (typeof review === 'string') return this.nothingChanged(res, portal, review);
      return this.http.send(res, 409, changeReviewPage(portal, sub, review, this.http.offers(), true));
    };
    if (form.when !== undefined && form.when !== when) return reviewAgain();
    try {
      if (when === 'period_end') {
        return await this.act(portal, res, 'scheduled', () => this.subscriptions.schedule(portal.id, sub, next, portal.customerId));
      }
      const prorationDate = form.proration_date === undefined ? undefined : Number(form.proration_date);
      const amountDue = form.amount_due === undefined ? undefined : Number(form.amount_due);
      return await this.act(portal, res, 'changed', () => this.subscriptions.changeNow(portal.id, sub, next, { customerId: portal.customerId, prorationDate, amountDue }));
    } catch (err) {
      if (err instanceof PaymentProviderError && err.param === 'amount_due') return reviewAgain();
      throw err;
    }
  }

  /** "Cancel now" asks first; its confirmation posts to the action below. Changes nothing. */
  @Get(':id/subscriptions/:sub/cancel-now')
  async confirmCancelNow(@Param('id') id: string, @Param('sub') sub: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const row = await this.liveSubscription(portal, sub);
    if (!row) return this.nothingChanged(res, portal, 'That subscription is not active for this customer.');
    return this.http.send(res, 200, cancelNowPage(portal, row));
  }

  /** cancel (at the period's end), resume, cancel-now, release (give up the pending change). */
  @Post(':id/subscriptions/:sub/:action')
  async subscriptionAction(@Param('id') id: string, @Param('sub') sub: string, @Param('action') action: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    if (!PORTAL_ACTIONS.includes(action as PortalAction)) return this.http.send(res, 404, notFound('portal action'));
    if (!SUBSCRIPTION_ID.test(sub)) return this.nothingChanged(res, portal, 'That subscription is not active for this customer.');
    const customer = portal.customerId;
    return this.act(portal, res, ACTION_OUTCOME[action as PortalAction], async () => {
      if (action === 'cancel-now') return this.subscriptions.cancelNow(portal.id, sub, customer);
      if (action !== 'release') return this.subscriptions.setCancelAtPeriodEnd(portal.id, sub, action === 'cancel', customer);
      const scheduleId = (await this.subscriptions.find(sub))?.object.schedule;
      if (!scheduleId) throw new PaymentProviderError('rejected', 'That subscription has no pending change.');
      return this.subscriptions.releaseSchedule(portal.id, scheduleId, customer);
    });
  }

  /** Re-delivers what a failed portal action left pending, then returns to the portal. */
  @Post(':id/deliver')
  async redeliver(@Param('id') id: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    return this.deliverThenReturn(portal.id, res);
  }

  /** The live subscription `id` of the portal's customer, or undefined. */
  private async liveSubscription(portal: SandboxPortalSession, id: string) {
    return SUBSCRIPTION_ID.test(id) ? (await this.store.liveSubscriptions(portal.customerId)).find((s) => s.id === id) : undefined;
  }

  /** The change a portal form asks for, or undefined after answering why it cannot be made (changing nothing). */
  private async askedChange(portal: SandboxPortalSession, subId: string, form: ChangeForm, res: Response): Promise<AskedChange | undefined> {
    if (!isPaidTier(this.config.tiers, form.tier)) {
      return void this.http.send(res, 400, messagePage('Unknown plan', `"${form.tier}" is not a plan that can be bought.`, back(portal)));
    }
    const row = await this.liveSubscription(portal, subId);
    if (!row) return void this.nothingChanged(res, portal, 'That subscription is not active for this customer.');
    const next = this.http.plan(form.tier, form.interval ?? row.interval, form.seats);
    if (typeof next === 'string') return void this.http.send(res, 400, messagePage('Invalid choice', next, back(portal)));
    const current: SandboxPlan = { tier: row.tier, interval: row.interval, quantity: row.quantity };
    if (next.tier === current.tier && next.interval === current.interval && next.quantity === current.quantity) {
      return void this.nothingChanged(res, portal, 'That is the current plan.');
    }
    const when = portalTakesNow(current, next, paidTiers(this.config.tiers)) ? 'now' : 'period_end';
    return { current, next, when, trialing: row.status === 'trialing' };
  }

  /** The provider's preview of a change as it would be made now, or why it cannot be made. */
  private async review(subId: string, change: AskedChange): Promise<PortalReview | string> {
    const prorationDate = nowSeconds();
    try {
      const preview = await this.subscriptions.preview(subId, change.next, change.when === 'now' ? { atPeriodEnd: false, prorationDate } : { atPeriodEnd: true });
      return { ...change, preview, prorationDate };
    } catch (err) {
      if (err instanceof PaymentProviderError && (err.kind === 'not_found' || err.kind === 'rejected')) return err.message;
      throw err;
    }
  }

  /**
   * Runs a portal change, delivers its events, and returns to the portal, which shows the new state and `outcome`;
   * a refusal (the subscription is not the customer's, not live, scheduled …) changes nothing.
   */
  private async act(portal: SandboxPortalSession, res: Response, outcome: PortalOutcome, change: () => Promise<unknown>) {
    try {
      await change();
    } catch (err) {
      if (err instanceof PaymentProviderError && err.param !== 'amount_due' && (err.kind === 'not_found' || err.kind === 'rejected')) {
        return this.nothingChanged(res, portal, err.kind === 'not_found' ? 'That subscription is not active for this customer.' : err.message);
      }
      throw err;
    }
    return this.deliverThenReturn(portal.id, res, outcome);
  }

  private nothingChanged(res: Response, portal: SandboxPortalSession, why: string) {
    return this.http.send(res, 409, messagePage('Nothing changed', why, back(portal)));
  }

  /** Delivers what the portal's changes left pending, then back to the portal (saying what was done). */
  private async deliverThenReturn(portalId: string, res: Response, outcome?: PortalOutcome) {
    const delivered = await this.delivery.deliverPending(portalId);
    if (!delivered.ok) return this.http.send(res, 502, deliveryFailedPage(`/sandbox/portal/${portalId}/deliver`, delivered.error));
    return this.http.redirect(res, `/sandbox/portal/${portalId}${outcome ? `?done=${outcome}` : ''}`);
  }

  /** The portal session, or undefined after answering 404/410 itself. */
  private async livePortal(id: string, res: Response) {
    const portal = this.http.enabled() && PORTAL_ID.test(id) ? await this.store.findPortal(id) : undefined;
    if (!portal) return void this.http.send(res, 404, notFound('portal session'));
    if (portal.expiresAt <= nowSeconds()) return void this.http.send(res, 410, expired(portal.returnUrl));
    return portal;
  }
}

function back(portal: SandboxPortalSession) {
  return { href: `/sandbox/portal/${portal.id}`, label: 'Back to your subscriptions' };
}
