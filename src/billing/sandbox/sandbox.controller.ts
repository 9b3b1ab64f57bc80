import { Body, Controller, Get, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';
import type { Response } from 'express';
import { Public } from '../../common/route-auth.decorators';
import { AppConfig } from '../../config/app-config';
import { paidTiers } from '../../config/tiers';
import { nowSeconds } from './provider-events';
import { checkoutPage, deliveryFailedPage, invoicePage, messagePage, portalPage } from './sandbox-pages';
import { SandboxDelivery } from './sandbox-delivery';
import { SandboxStore } from './sandbox.store';
import { SandboxUrls } from './sandbox-urls';

export class TierForm {
  @IsString()
  @MaxLength(64)
  tier: string;
}

const CHECKOUT_ID = /^cs_test_[A-Za-z0-9]{1,100}$/;
const PORTAL_ID = /^bps_[A-Za-z0-9]{1,100}$/;
const SUBSCRIPTION_ID = /^sub_[A-Za-z0-9_]{1,100}$/;
const INVOICE_ID = /^in_[A-Za-z0-9]{1,100}$/;

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
    private readonly delivery: SandboxDelivery,
    private readonly urls: SandboxUrls,
    private readonly config: AppConfig,
  ) {}

  @Get('checkout/:id')
  async checkout(@Param('id') id: string, @Res() res: Response) {
    const session = this.enabled() && CHECKOUT_ID.test(id) ? await this.store.findCheckout(id) : undefined;
    if (!session) return this.send(res, 404, notFound('checkout session'));
    if (session.status === 'expired' || (session.status === 'open' && session.expiresAt <= nowSeconds())) {
      return this.send(res, 410, expired(session.cancelUrl));
    }
    return this.send(res, 200, checkoutPage(session));
  }

  /** Pays the session (once), delivers its events, then returns to the web app. Also the retry button. */
  @Post('checkout/:id/pay')
  async pay(@Param('id') id: string, @Res() res: Response) {
    if (!this.enabled() || !CHECKOUT_ID.test(id)) return this.send(res, 404, notFound('checkout session'));
    const session = await this.store.completeCheckout(id, (invoiceId) => this.urls.page(`/sandbox/invoices/${invoiceId}`));
    if (!session) return this.send(res, 404, notFound('checkout session'));
    if (session === 'expired') return this.send(res, 410, messagePage('Checkout expired', 'This checkout session has expired. Start a new checkout.'));
    const outcome = await this.delivery.deliverPending(id);
    if (!outcome.ok) return this.send(res, 502, deliveryFailedPage(`/sandbox/checkout/${id}/pay`, outcome.error));
    // The provider fills in the literal placeholder; accept its URL-encoded form too.
    const target = session.successUrl.replace(/\{CHECKOUT_SESSION_ID\}|%7BCHECKOUT_SESSION_ID%7D/gi, session.id);
    return this.redirect(res, target);
  }

  @Get('portal/:id')
  async portal(@Param('id') id: string, @Res() res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const subs = await this.store.activeSubscriptions(portal.customerId);
    return this.send(res, 200, portalPage(portal, subs, paidTiers(this.config.tiers)));
  }

  @Post('portal/:id/subscriptions/:sub/tier')
  async switchTier(@Param('id') id: string, @Param('sub') sub: string, @Body() form: TierForm, @Res() res: Response) {
    if (!paidTiers(this.config.tiers).includes(form.tier)) {
      return this.send(res, 400, messagePage('Unknown tier', `"${form.tier}" is not a tier that can be bought.`));
    }
    return this.change(id, sub, { tier: form.tier }, res);
  }

  @Post('portal/:id/subscriptions/:sub/cancel')
  async cancel(@Param('id') id: string, @Param('sub') sub: string, @Res() res: Response) {
    return this.change(id, sub, 'cancel', res);
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
    return this.send(res, 200, invoicePage(invoice));
  }

  private async change(id: string, sub: string, change: { tier: string } | 'cancel', res: Response) {
    const portal = await this.livePortal(id, res);
    if (!portal) return;
    const changed = SUBSCRIPTION_ID.test(sub) && (await this.store.changeSubscription(portal, sub, change));
    if (!changed) {
      return this.send(res, 409, messagePage('Nothing changed', 'That subscription is not active for this customer.', {
        href: `/sandbox/portal/${portal.id}`,
        label: 'Back to your subscriptions',
      }));
    }
    return this.deliverThenReturn(portal.id, portal.returnUrl, res);
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

function notFound(what: string): string {
  return messagePage('Not found', `There is no such ${what}. Start again from the application.`);
}

function expired(backUrl: string): string {
  return messagePage('Session expired', 'This session has expired. Start again from the application.', { href: backUrl, label: 'Return' });
}
