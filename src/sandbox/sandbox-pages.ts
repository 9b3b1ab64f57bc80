import { formatDate, formatMoney, formatNumber } from '../common/display-format';
import { esc, htmlPage } from '../common/html-page';
import { isPackLine, nowSeconds, SANDBOX_CURRENCY, SANDBOX_PACK_PRICE, sandboxAmount, SandboxInterval, SandboxPlan, trialEndOf, unitAmount } from './provider-events';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { MeterTotal } from './sandbox.repository';

/**
 * The sandbox's server-rendered pages, in the look of common/html-page.ts: working without script (the checkout
 * page's one script, served by the service, only keeps its Pay button's amount in step with the choice).
 */

export function layout(title: string, body: string, script?: string): string {
  return htmlPage(`${title} · Sandbox payments`, body, 'Sandbox — no real payment', script);
}

/** An amount of `currency` (a checkout's or a subscription's; default the sandbox's own), as every page writes money. */
export function money(amount: number, currency = SANDBOX_CURRENCY): string {
  return formatMoney(amount, currency);
}

/** "€29.00 per month" / "€290.00 per seat per year": a price as the pages show it. */
export function priceText(tier: string, interval: SandboxInterval, perSeat: boolean, currency = SANDBOX_CURRENCY): string {
  return `${money(unitAmount(tier, interval, currency), currency)} per ${perSeat ? 'seat per ' : ''}${interval}`;
}

/** What one period of `plan` costs (the provider's price times the seats), in minor units of `currency`. */
export function periodAmount(plan: SandboxPlan, currency = SANDBOX_CURRENCY): number {
  return unitAmount(plan.tier, plan.interval, currency) * plan.quantity;
}

/** What one period of `plan` costs, in words: "€297.00 per month (3 seats)". */
export function planTotal(plan: SandboxPlan, perSeat: boolean, currency = SANDBOX_CURRENCY): string {
  return `${money(periodAmount(plan, currency), currency)} per ${plan.interval}${perSeat ? ` (${plan.quantity} seat${plan.quantity === 1 ? '' : 's'})` : ''}`;
}

/** The script that keeps the checkout page's total and Pay button in step with the choice (sandbox-assets.ts). */
export const CHECKOUT_SCRIPT = '/sandbox/assets/checkout.js';

/**
 * The checkout page for the plan chosen so far (`choice`): the interval and seats sit in the form of the Pay button,
 * so paying submits them, with the total the page showed (`total`): when that is not the choice's (the choice was
 * changed without script, which would have updated the button), nothing is paid and the page comes back with the
 * choice's total (`recheck`). Works without script; with it, the button's amount follows the choice as it is made.
 */
export function checkoutPage(s: SandboxCheckoutSession, choice: SandboxPlan, tier: { perSeat: boolean; maxSeats: number }, recheck = false): string {
  if (s.status === 'complete') {
    return layout(
      'Already paid',
      `<h1>This checkout is already paid</h1>
<p>The ${esc(s.tier)} subscription was bought with this session.</p>
<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay"><button type="submit">Continue</button></form>`,
    );
  }
  const action = `/sandbox/checkout/${esc(s.id)}`;
  const trial = s.trialDays > 0;
  const { currency } = s;
  const total = planTotal(choice, tier.perSeat, currency);
  const intervals = (['month', 'year'] as const)
    .map(
      (i) =>
        `<label><input type="radio" name="interval" value="${i}" data-unit-amount="${unitAmount(choice.tier, i, currency)}"${i === choice.interval ? ' checked' : ''}> ${esc(priceText(choice.tier, i, tier.perSeat, currency))}</label>`,
    )
    .join('\n');
  const seats = tier.perSeat
    ? `<p><label for="seats">Seats</label> <input id="seats" name="seats" type="number" inputmode="numeric" min="1" max="${tier.maxSeats}" value="${esc(choice.quantity)}" required></p>\n`
    : '';
  const totalLine = trial
    ? `${esc(s.trialDays)} days free, until ${esc(formatDate(trialEndOf(nowSeconds(), s.trialDays)))}; then <output id="total" aria-live="polite">${esc(total)}</output>`
    : `Total: <output id="total" aria-live="polite">${esc(total)}</output>`;
  const pay = trial ? 'Add card and start trial' : `Pay ${money(periodAmount(choice, currency), currency)}`;
  const noCard =
    trial && s.paymentMethodCollection === 'if_required'
      ? `\n<button type="submit" class="plain" formaction="${action}/start-trial">Start trial without a card</button>`
      : '';
  const recheckNote = recheck
    ? `<div class="error" role="alert"><p>Nothing was charged: the total for your choice is ${esc(total)}. Check it, then press ${esc(pay)}.</p></div>\n`
    : '';
  return layout(
    `Subscribe to ${s.tier}`,
    `<h1>Subscribe to ${esc(s.tier)}</h1>
${recheckNote}<form method="post" action="${action}/pay" data-checkout data-currency="${esc(currency.toUpperCase())}" data-per-seat="${tier.perSeat}" data-trial="${trial}">
<fieldset><legend>Billing interval</legend>
${intervals}
</fieldset>
${seats}<p class="total">${totalLine}</p>
<input type="hidden" name="total" value="${periodAmount(choice, currency)}">
<div class="actions">
<button type="submit" data-pay>${esc(pay)}</button>${noCard}
<a href="${esc(s.cancelUrl)}">Cancel and return</a>
</div>
${noCard ? '<p class="note">Without a card the subscription is canceled when the trial ends.</p>\n' : ''}</form>
<p class="note">${trial ? 'Starting the trial' : 'Paying here'} completes the checkout and sends the signed <code>customer.subscription.created</code> and
<code>invoice.payment_succeeded</code> events to this service's webhook endpoint. Session <code>${esc(s.id)}</code>.</p>`,
    CHECKOUT_SCRIPT,
  );
}

/** Shown when the events could not be delivered: the session stays paid; "Try again" re-delivers. */
export function deliveryFailedPage(retryAction: string, error: string): string {
  return layout(
    'Delivery failed',
    `<h1>Payment recorded, but the service was not notified</h1>
<div class="error" role="alert"><p>The sandbox could not deliver its webhook event: ${esc(error)}</p></div>
<p>Nothing is lost: the events are kept and sent again when you try again.</p>
<form method="post" action="${esc(retryAction)}"><button type="submit">Try delivery again</button></form>`,
  );
}

export function invoicePage(i: SandboxInvoice, usage: MeterTotal[] = []): string {
  const lines = i.lines
    .map((line) => `<tr><td>${esc(line.description)}${isPackLine(line) ? '' : `<br><span class="note">${esc(formatDate(line.periodStart))} to ${esc(formatDate(line.periodEnd))}</span>`}</td><td>${esc(formatMoney(line.amount, i.currency))}</td></tr>`)
    .join('\n');
  const subscription = i.tier !== null;
  return layout(
    `Invoice ${i.id}`,
    `<h1>Invoice ${esc(i.id)}</h1>
<dl>
<dt>Status</dt><dd>${esc(i.status)}</dd>
<dt>${subscription ? 'Plan' : 'For'}</dt><dd>${esc(i.tier ?? 'credit packs')}</dd>
<dt>Amount</dt><dd>${esc(formatMoney(i.amountPaid, i.currency))}</dd>
${subscription ? `<dt>Period</dt><dd>${esc(formatDate(i.periodStart))} to ${esc(formatDate(i.periodEnd))}</dd>\n` : ''}<dt>Paid on</dt><dd>${i.paidAt === null ? 'not paid' : esc(formatDate(i.paidAt))}</dd>
</dl>
<table><caption>Lines</caption>
${lines}
</table>
${subscription ? usageSection(usage) : ''}`,
  );
}

function usageSection(usage: MeterTotal[]): string {
  return `<h2>Metered usage in this period</h2>
${
  usage.length
    ? `<table><caption>Meter events</caption><tr><th>Meter event</th><th>Total</th><th>Events</th></tr>
${usage.map((u) => `<tr><td>${esc(u.eventName)}</td><td>${esc(formatNumber(u.total))}</td><td>${esc(formatNumber(u.events))}</td></tr>`).join('\n')}
</table>`
    : '<p>No meter events were reported for this period.</p>'
}`;
}

/**
 * The checkout page of credit packs (mode payment): what is bought and its total, nothing to choose. The Pay form
 * carries the total shown, so a page older than the session's amount pays nothing.
 */
export function packCheckoutPage(s: SandboxCheckoutSession, pack: { metric: string; amount: number } | undefined): string {
  if (s.status === 'complete') {
    return layout(
      'Already paid',
      `<h1>This checkout is already paid</h1>
<p>The credit packs were bought with this session.</p>
<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay"><button type="submit">Continue</button></form>`,
    );
  }
  const credits = pack ? `<p>${esc(formatNumber(pack.amount * s.quantity))} ${esc(pack.metric)} credits.</p>\n` : '';
  return layout(
    `Buy credit pack ${s.pack}`,
    `<h1>Buy ${esc(s.quantity)} × credit pack ${esc(s.pack)}</h1>
${credits}<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay">
<p class="total">Total: ${esc(money(s.amountTotal, s.currency))} (${esc(money(sandboxAmount(SANDBOX_PACK_PRICE, s.currency), s.currency))} per pack)</p>
<input type="hidden" name="total" value="${esc(s.amountTotal)}">
<div class="actions">
<button type="submit">Pay ${esc(money(s.amountTotal, s.currency))}</button>
<a href="${esc(s.cancelUrl)}">Cancel and return</a>
</div>
</form>
<p class="note">Paying here completes the checkout, saves the card for later top-ups, and sends the signed
<code>checkout.session.completed</code> and <code>invoice.paid</code> events to this service's webhook endpoint. Session <code>${esc(s.id)}</code>.</p>`,
  );
}

export function messagePage(title: string, text: string, link?: { href: string; label: string }): string {
  return layout(title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>${link ? `<p><a href="${esc(link.href)}">${esc(link.label)}</a></p>` : ''}`);
}
