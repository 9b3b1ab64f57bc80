import { esc, htmlPage } from '../common/html-page';
import { planLabel, SandboxInterval, SandboxPlan, unitAmount } from './provider-events';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { MeterTotal } from './sandbox.repository';

/** The sandbox's server-rendered pages, in the look of common/html-page.ts. */

export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() }).format(amount / 100);
  } catch {
    return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
}

export function day(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(0, 10);
}

export function layout(title: string, body: string): string {
  return htmlPage(`${title} · Sandbox payments`, body, 'Sandbox — no real payment');
}

/** "€29.00 per month" / "€290.00 per seat per year": a price as the pages show it. */
export function priceText(tier: string, interval: SandboxInterval, perSeat: boolean): string {
  return `${money(unitAmount(tier, interval), 'eur')} per ${perSeat ? 'seat per ' : ''}${interval}`;
}

/** What one period of `plan` costs, in words: "€297.00 per month (3 seats)". */
export function planTotal(plan: SandboxPlan, perSeat: boolean): string {
  const total = money(unitAmount(plan.tier, plan.interval) * plan.quantity, 'eur');
  return `${total} per ${plan.interval}${perSeat ? ` (${plan.quantity} seat${plan.quantity === 1 ? '' : 's'})` : ''}`;
}

/** The checkout page for the plan chosen so far (`choice`): pay (or start the trial), or change interval and seats. */
export function checkoutPage(s: SandboxCheckoutSession, choice: SandboxPlan, tier: { perSeat: boolean; maxSeats: number }): string {
  if (s.status === 'complete') {
    return layout(
      'Already paid',
      `<h1>This checkout is already paid</h1>
<p>The ${esc(s.tier)} subscription was bought with this session.</p>
<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay"><button type="submit">Continue</button></form>`,
    );
  }
  const action = `/sandbox/checkout/${esc(s.id)}`;
  const total = planTotal(choice, tier.perSeat);
  const trialEnd = day(Math.floor(Date.now() / 1000) + s.trialDays * 86_400);
  const chosen = `<input type="hidden" name="interval" value="${esc(choice.interval)}"><input type="hidden" name="seats" value="${esc(choice.quantity)}">`;
  const pay = s.trialDays > 0 ? 'Add card and start trial' : `Pay ${money(unitAmount(choice.tier, choice.interval) * choice.quantity, 'eur')}`;
  const noCard =
    s.trialDays > 0 && s.paymentMethodCollection === 'if_required'
      ? `<form method="post" action="${action}/start-trial">${chosen}
<button type="submit" class="plain">Start trial without a card</button>
<p class="note">Without a card the subscription is canceled when the trial ends.</p>
</form>`
      : '';
  const intervals = (['month', 'year'] as const)
    .map((i) => `<label><input type="radio" name="interval" value="${i}"${i === choice.interval ? ' checked' : ''}> ${esc(priceText(s.tier, i, tier.perSeat))}</label>`)
    .join('\n');
  const seats = tier.perSeat
    ? `<p><label for="seats">Seats</label><input id="seats" name="seats" type="number" min="1" max="${tier.maxSeats}" value="${esc(choice.quantity)}" required></p>`
    : '';
  return layout(
    `Subscribe to ${s.tier}`,
    `<h1>Subscribe to ${esc(s.tier)}</h1>
<dl>
<dt>Plan</dt><dd>${esc(planLabel(choice))}</dd>
<dt>Price</dt><dd>${esc(total)}</dd>
${s.trialDays > 0 ? `<dt>Trial</dt><dd>${esc(s.trialDays)} days free, until ${esc(trialEnd)}; then ${esc(total)}</dd>\n` : ''}<dt>Session</dt><dd><code>${esc(s.id)}</code></dd>
</dl>
<p>${s.trialDays > 0 ? 'Starting the trial' : 'Paying here'} completes the checkout and sends the signed <code>customer.subscription.created</code> and
<code>invoice.payment_succeeded</code> events to this service's webhook endpoint.</p>
<form method="post" action="${action}/pay" class="actions">${chosen}
<button type="submit">${esc(pay)}</button>
<a href="${esc(s.cancelUrl)}">Cancel and return</a>
</form>
${noCard}<form method="get" action="${action}">
<fieldset><legend>Billing interval</legend>
${intervals}
</fieldset>
${seats}<button type="submit" class="plain">Update total</button>
</form>`,
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
    .map((line) => `<tr><td>${esc(line.description)}<br><span class="note">${esc(day(line.periodStart))} to ${esc(day(line.periodEnd))}</span></td><td>${esc(money(line.amount, i.currency))}</td></tr>`)
    .join('\n');
  return layout(
    `Invoice ${i.id}`,
    `<h1>Invoice ${esc(i.id)}</h1>
<dl>
<dt>Status</dt><dd>paid</dd>
<dt>Plan</dt><dd>${esc(i.tier)}</dd>
<dt>Amount</dt><dd>${esc(money(i.amountPaid, i.currency))}</dd>
<dt>Period</dt><dd>${esc(day(i.periodStart))} to ${esc(day(i.periodEnd))}</dd>
<dt>Paid on</dt><dd>${esc(day(i.paidAt))}</dd>
</dl>
<table><caption>Lines</caption>
${lines}
</table>
<h2>Metered usage in this period</h2>
${
  usage.length
    ? `<table><caption>Meter events</caption><tr><th>Meter event</th><th>Total</th><th>Events</th></tr>
${usage.map((u) => `<tr><td>${esc(u.eventName)}</td><td>${u.total}</td><td>${u.events}</td></tr>`).join('\n')}
</table>`
    : '<p>No meter events were reported for this period.</p>'
}`,
  );
}

export function messagePage(title: string, text: string, link?: { href: string; label: string }): string {
  return layout(title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>${link ? `<p><a href="${esc(link.href)}">${esc(link.label)}</a></p>` : ''}`);
}
