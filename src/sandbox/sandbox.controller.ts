import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import type { Response } from 'express';
import { Public } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import { isPaidTier, paidTiers } from '../config/tiers';
import { PaymentProviderError } from '../provider/payment-provider.port';
import { nowSeconds, SANDBOX_INTERVALS, SandboxInterval, SandboxPlan } from './provider-events';
import { portalTakesNow } from './sandbox-billing';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { checkoutPage, deliveryFailedPage, invoicePage, messagePage } from './sandbox-pages';
import { portalPage, PortalTier } from './sandbox-portal-page';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { clockOf, SandboxSubscriptions } from './sandbox-subscriptions';
import { SandboxDelivery } from './sandbox-delivery';
import { SandboxStore } from './sandbox.store';
import { SandboxUrls } from './sandbox-urls';

/** The interval and seats chosen on the checkout page (its query, and the hidden fields of its forms). */
export class PlanChoiceForm {
  @IsOptional()
  @IsIn(SANDBOX_INTERVALS)
  interval?: SandboxInterval;

  @IsOptional()
  @Matches(/^\d{1,7}$/, { message: 'seats must be a whole number' })
  seats?: string;
}

export class ChangeForm extends PlanChoiceForm {
  @IsString()
  @MaxLength(64)
  tier: string;
}

const CHECKOUT_ID = /^cs_test_[A-Za-z0-9]{1,100}$/;
const PORTAL_ID = /^bps_[A-Za-z0-9]{1,100}$/;
const SUBSCRIPTION_ID = /^sub_[A-Za-z0-9_]{1,100}$/;
const INVOICE_ID = /^in_[A-Za-z0-9]{1,100}$/;
const PORTAL_ACTIONS = ['cancel', 'resume', 'cancel-now', 'release'] as const;
type PortalAction = (typeof PORTAL_ACTIONS)[number];

/**
 * The sandbox provider's hosted pages. Public: access is by the unguessable session id in the URL, as on
 * the provider's own hosted pages. No CSRF token: every form acts only on the session named in its own
 * URL, which another site cannot know.
 */
@ApiExcludeController()
@Public()
@Controller('sandbox')
export class SandboxController {
  constructor(
    private readonly store: SandboxStore,
    private readonly subscriptions: SandboxSubscriptions,
    private readonly delivery: SandboxDelivery,
    private readonly urls: SandboxUrls,
    private readonly config: AppConfig,
  ) {}

  @Get('checkout/:id')
  async checkout(@Param('id') id: string, @Query() query: PlanChoiceForm, @Res() res: Response) {
    const session = this.enabled() && CHECKOUT_ID.test(id) ? await this.store.findCheckout(id) : undefined;
    if (!session) return this.send(res, 404, notFound('checkout session'));
    if (session.status === 'expired' || (session.status === 'open' && session.expiresAt <= nowSeconds())) {
      return this.send(res, 410, expired(session.cancelUrl));
    }
    const choice = this.choice(session, query);
    if (typeof choice === 'string') return this.send(res, 400, messagePage('Invalid choice', choice, { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    return this.send(res, 200, checkoutPage(session, choice, this.portalTier(session.tier)));
  }

  /** Pays the session (once) with a card, delivers its events, then returns to the web app. Also the retry button. */
  @Post('checkout/:id/pay')
  pay(@Param('id') id: string, @Body() form: PlanChoiceForm, @Res() res: Response) {
    return this.complete(id, form, true, res);
  }

  /** Starts the session's trial without a card (only when the checkout allowed it). */
  @Post('checkout/:id/start-trial')
  startTrial(@Param('id') id: string, @Body() form: PlanChoiceForm, @Res() res: Response) {
    return this.complete(id, form, false, res);
  }

  @Get('portal/:id')
  async portal(@Param('id') id: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const subs = await Promise.all(
      (await this.store.liveSubscriptions(portal.customerId)).map(async (sub) => ({
        sub,
        today: clockOf(sub),
        pending: sub.scheduleId ? await this.store.findSchedule(sub.scheduleId) : undefined,
      })),
    );
    return this.send(res, 200, portalPage(portal, subs, paidTiers(this.config.tiers).map((t) => this.portalTier(t))));
  }

  /** Changes plan, interval and seats: now (prorated) when any part is bigger, else at the period's end. */
  @Post('portal/:id/subscriptions/:sub/change')
  async change(@Param('id') id: string, @Param('sub') sub: string, @Body() form: ChangeForm, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    if (!isPaidTier(this.config.tiers, form.tier)) {
      return this.send(res, 400, messagePage('Unknown plan', `"${form.tier}" is not a plan that can be bought.`, back(portal)));
    }
    const current = SUBSCRIPTION_ID.test(sub) ? (await this.subscriptions.find(sub))?.object : undefined;
    if (!current || current.customer !== portal.customerId) return this.nothingChanged(res, portal, 'That subscription is not active for this customer.');
    const item = current.items.data[0];
    const next = this.plan(form.tier, form.interval ?? item.price.recurring.interval, form.seats);
    if (typeof next === 'string') return this.send(res, 400, messagePage('Invalid choice', next, back(portal)));
    const now = { tier: item.price.metadata.tier, interval: item.price.recurring.interval, quantity: item.quantity };
    if (next.tier === now.tier && next.interval === now.interval && next.quantity === now.quantity) {
      return this.nothingChanged(res, portal, 'That is the current plan.');
    }
    return this.act(portal, res, () =>
      portalTakesNow(now, next, paidTiers(this.config.tiers))
        ? this.subscriptions.changeNow(portal.id, sub, next, { customerId: portal.customerId })
        : this.subscriptions.schedule(portal.id, sub, next, portal.customerId),
    );
  }

  /** cancel (at the period's end), resume, cancel-now, release (give up the pending change). */
  @Post('portal/:id/subscriptions/:sub/:action')
  async subscriptionAction(@Param('id') id: string, @Param('sub') sub: string, @Param('action') action: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    if (!PORTAL_ACTIONS.includes(action as PortalAction)) return this.send(res, 404, notFound('portal action'));
    if (!SUBSCRIPTION_ID.test(sub)) return this.nothingChanged(res, portal, 'That subscription is not active for this customer.');
    const customer = portal.customerId;
    return this.act(portal, res, async () => {
      if (action === 'cancel-now') return this.subscriptions.cancelNow(portal.id, sub, customer);
      if (action !== 'release') return this.subscriptions.setCancelAtPeriodEnd(portal.id, sub, action === 'cancel', customer);
      const scheduleId = (await this.subscriptions.find(sub))?.object.schedule;
      if (!scheduleId) throw new PaymentProviderError('rejected', 'That subscription has no pending change.');
      return this.subscriptions.releaseSchedule(portal.id, scheduleId, customer);
    });
  }

  /** Re-delivers what a failed portal action left pending, then returns to the web app. */
  @Post('portal/:id/deliver')
  async redeliver(@Param('id') id: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    return this.deliverThenReturn(portal.id, portal.returnUrl, res);
  }

  @Get('invoices/:id')
  async invoice(@Param('id') id: string, @Res() res: Response) {
    const invoice = this.enabled() && INVOICE_ID.test(id) ? await this.store.findInvoice(id) : undefined;
    if (!invoice) return this.send(res, 404, notFound('invoice'));
    return this.send(res, 200, invoicePage(invoice, await this.store.invoiceUsage(invoice)));
  }

  private async complete(id: string, form: PlanChoiceForm, card: boolean, res: Response) {
    const found = this.enabled() && CHECKOUT_ID.test(id) ? await this.store.findCheckout(id) : undefined;
    if (!found) return this.send(res, 404, notFound('checkout session'));
    const choice = this.choice(found, form);
    if (typeof choice === 'string') return this.send(res, 400, messagePage('Invalid choice', choice, { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    const session = await this.store.completeCheckout(id, { ...choice, card }, (invoiceId) => this.urls.page(`/sandbox/invoices/${invoiceId}`));
    if (!session) return this.send(res, 404, notFound('checkout session'));
    if (session === 'expired') return this.send(res, 410, messagePage('Checkout expired', 'This checkout session has expired. Start a new checkout.'));
    if (session === 'card_required') return this.send(res, 400, messagePage('Card required', 'This checkout needs a card.', { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    const outcome = await this.delivery.deliverPending(id);
    if (!outcome.ok) return this.send(res, 502, deliveryFailedPage(`/sandbox/checkout/${id}/pay`, outcome.error));
    // The provider fills in the literal placeholder; accept its URL-encoded form too.
    const target = session.successUrl.replace(/\{CHECKOUT_SESSION_ID\}|%7BCHECKOUT_SESSION_ID%7D/gi, session.id);
    return this.redirect(res, target);
  }

  /** The session's plan with the page's interval and seats, or why they cannot be bought. */
  private choice(session: SandboxCheckoutSession, form: PlanChoiceForm): SandboxPlan | string {
    return this.plan(session.tier, form.interval ?? session.interval, form.seats ?? String(session.quantity));
  }

  /** A plan of a paid tier; seats only count for a per-seat tier (1 to its max), else the quantity is 1. */
  private plan(tier: string, interval: SandboxInterval, seats: string | undefined): SandboxPlan | string {
    const { perSeat, maxSeats } = this.portalTier(tier);
    if (!perSeat) return { tier, interval, quantity: 1 };
    const quantity = Number(seats ?? 1);
    if (!Number.isSafeInteger(quantity) || quantity < 1 || quantity > maxSeats) return `Seats must be a whole number from 1 to ${maxSeats}.`;
    return { tier, interval, quantity };
  }

  private portalTier(tier: string): PortalTier {
    const plan = this.config.tiers[tier];
    return { tier, perSeat: plan?.perSeat ?? false, maxSeats: plan?.metrics.users.limit ?? 1 };
  }

  /** Runs a portal change; a refusal (the subscription is not the customer's, not live, scheduled …) changes nothing. */
  private async act(portal: SandboxPortalSession, res: Response, change: () => Promise<unknown>) {
    try {
      await change();
    } catch (err) {
      if (err instanceof PaymentProviderError && (err.kind === 'not_found' || err.kind === 'rejected')) {
        return this.nothingChanged(res, portal, err.kind === 'not_found' ? 'That subscription is not active for this customer.' : err.message);
      }
      throw err;
    }
    return this.deliverThenReturn(portal.id, portal.returnUrl, res);
  }

  private nothingChanged(res: Response, portal: SandboxPortalSession, why: string) {
    return this.send(res, 409, messagePage('Nothing changed', why, back(portal)));
  }

  private async deliverThenReturn(portalId: string, returnUrl: string, res: Response) {
    const outcome = await this.delivery.deliverPending(portalId);
    if (!outcome.ok) return this.send(res, 502, deliveryFailedPage(`/sandbox/portal/${portalId}/deliver`, outcome.error));
    return this.redirect(res, returnUrl);
  }

  /** The portal session, or undefined after answering 404/410 itself. */
  private async livePortal(id: string, res: Response) {
    const portal = this.enabled() && PORTAL_ID.test(id) ? await this.store.findPortal(id) : undefined;
    if (!portal) return void this.send(res, 404, notFound('portal session'));
    if (portal.expiresAt <= nowSeconds()) return void this.send(res, 410, expired(portal.returnUrl));
    return portal;
  }

  /** With a real provider configured the sandbox's pages do not exist. */
  private enabled(): boolean {
    return this.config.provider === 'sandbox';
  }

  private send(res: Response, status: number, html: string) {
    this.secure(res);
    res.status(status).type('html').send(html);
  }

  private redirect(res: Response, url: string) {
    this.secure(res);
    res.redirect(303, url);
  }

  private secure(res: Response) {
    res.setHeader('Cache-Control', 'no-store');
    // The session id in the URL is the credential: never hand it to the next site in a Referer.
    res.setHeader('Referrer-Policy', 'no-referrer');
    // form-action must allow the web app, because browsers apply it to the redirect after a form post.
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${this.config.appUrl.origin}; frame-ancestors 'none'; base-uri 'none'`,
    );
  }
}

function back(portal: SandboxPortalSession) {
  return { href: `/sandbox/portal/${portal.id}`, label: 'Back to your subscriptions' };
}

function notFound(what: string): string {
  return messagePage('Not found', `There is no such ${what}. Start again from the application.`);
}

function expired(backUrl: string): string {
  return messagePage('Session expired', 'This session has expired. Start again from the application.', { href: backUrl, label: 'Return' });
}
