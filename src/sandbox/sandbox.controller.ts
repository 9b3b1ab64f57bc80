import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/route-auth.decorators';
import { nowSeconds, SandboxPlan } from './provider-events';
import { checkoutScript } from './sandbox-assets';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxDelivery } from './sandbox-delivery';
import { CheckoutForm, CheckoutQuery, PlanChoiceForm } from './sandbox-forms';
import { expired, notFound, SandboxHttp } from './sandbox-http';
import { checkoutPage, deliveryFailedPage, invoicePage, messagePage, packCheckoutPage, periodAmount } from './sandbox-pages';
import { SandboxStore } from './sandbox.store';
import { SandboxUrls } from './sandbox-urls';

const CHECKOUT_ID = /^cs_test_[A-Za-z0-9]{1,100}$/;
const INVOICE_ID = /^in_[A-Za-z0-9]{1,100}$/;

/**
 * The sandbox provider's hosted checkout and invoice pages (the portal's are in sandbox-portal.controller.ts).
 * Public: access is by the unguessable session id in the URL, as on the provider's own hosted pages. No CSRF
 * token: every form acts only on the session named in its own URL, which another site cannot know.
 */
@ApiExcludeController()
@Public()
@Controller('sandbox')
export class SandboxController {
  constructor(
    private readonly store: SandboxStore,
    private readonly delivery: SandboxDelivery,
    private readonly urls: SandboxUrls,
    private readonly http: SandboxHttp,
  ) {}

  @Get('checkout/:id')
  async checkout(@Param('id') id: string, @Query() query: CheckoutQuery, @Res() res: Response) {
    const session = this.http.enabled() && CHECKOUT_ID.test(id) ? await this.store.findCheckout(id) : undefined;
    if (!session) return this.http.send(res, 404, notFound('checkout session'));
    if (session.status === 'expired' || (session.status === 'open' && session.expiresAt <= nowSeconds())) {
      return this.http.send(res, 410, expired(session.cancelUrl));
    }
    if (session.mode === 'payment') return this.http.send(res, 200, packCheckoutPage(session, this.http.pack(session.pack!)));
    const choice = this.choice(session, query);
    if (typeof choice === 'string') return this.http.send(res, 400, messagePage('Invalid choice', choice, { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    return this.http.send(res, 200, checkoutPage(session, choice, this.http.offer(choice.tier), query.recheck === '1'));
  }

  /** The checkout page's script (progressive enhancement: the page works without it). */
  @Get('assets/checkout.js')
  checkoutScript(@Res() res: Response) {
    if (!this.http.enabled()) return this.http.send(res, 404, notFound('page'));
    this.http.secure(res);
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.status(200).type('text/javascript; charset=utf-8').send(checkoutScript);
  }

  /** Pays the session (once) with a card, delivers its events, then returns to the web app. Also the retry button. */
  @Post('checkout/:id/pay')
  pay(@Param('id') id: string, @Body() form: CheckoutForm, @Res() res: Response) {
    return this.complete(id, form, true, res);
  }

  /** Starts the session's trial without a card (only when the checkout allowed it). */
  @Post('checkout/:id/start-trial')
  startTrial(@Param('id') id: string, @Body() form: CheckoutForm, @Res() res: Response) {
    return this.complete(id, form, false, res);
  }

  @Get('invoices/:id')
  async invoice(@Param('id') id: string, @Res() res: Response) {
    const invoice = this.http.enabled() && INVOICE_ID.test(id) ? await this.store.findInvoice(id) : undefined;
    if (!invoice) return this.http.send(res, 404, notFound('invoice'));
    return this.http.send(res, 200, invoicePage(invoice, await this.store.invoiceUsage(invoice)));
  }

  private async complete(id: string, form: CheckoutForm, card: boolean, res: Response) {
    const found = this.http.enabled() && CHECKOUT_ID.test(id) ? await this.store.findCheckout(id) : undefined;
    if (!found) return this.http.send(res, 404, notFound('checkout session'));
    // A pack checkout has nothing to choose: what the session sells, at the total its page showed.
    if (found.mode === 'payment' && found.status === 'open' && form.total !== undefined && Number(form.total) !== found.amountTotal) {
      return this.http.redirect(res, `/sandbox/checkout/${id}`);
    }
    const choice = found.mode === 'payment' ? { tier: '', interval: found.interval, quantity: found.quantity } : this.choice(found, form);
    if (typeof choice === 'string') return this.http.send(res, 400, messagePage('Invalid choice', choice, { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    // The page showed another total than the choice's (changed without script): pay nothing, show the choice's.
    if (found.mode === 'subscription' && found.status === 'open' && form.total !== undefined && Number(form.total) !== periodAmount(choice, found.currency)) {
      const query = new URLSearchParams({ interval: choice.interval, seats: String(choice.quantity), recheck: '1' });
      return this.http.redirect(res, `/sandbox/checkout/${id}?${query}`);
    }
    const session = await this.store.completeCheckout(id, { ...choice, card }, (invoiceId) => this.urls.page(`/sandbox/invoices/${invoiceId}`));
    if (!session) return this.http.send(res, 404, notFound('checkout session'));
    if (session === 'expired') return this.http.send(res, 410, messagePage('Checkout expired', 'This checkout session has expired. Start a new checkout.'));
    if (session === 'card_required') return this.http.send(res, 400, messagePage('Card required', 'This checkout needs a card.', { href: `/sandbox/checkout/${id}`, label: 'Back' }));
    const outcome = await this.delivery.deliverPending(id);
    if (!outcome.ok) return this.http.send(res, 502, deliveryFailedPage(`/sandbox/checkout/${id}/pay`, outcome.error));
    // The provider fills in the literal placeholder; accept its URL-encoded form too.
    const target = session.successUrl.replace(/\{CHECKOUT_SESSION_ID\}|%7BCHECKOUT_SESSION_ID%7D/gi, session.id);
    return this.http.redirect(res, target);
  }

  /** The session's plan with the page's interval and seats, or why they cannot be bought. */
  private choice(session: SandboxCheckoutSession, form: PlanChoiceForm): SandboxPlan | string {
    return this.http.plan(session.tier!, form.interval ?? session.interval, form.seats ?? String(session.quantity));
  }
}
