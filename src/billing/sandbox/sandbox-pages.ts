import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { PortalSubscription } from './sandbox.repository';

/**
 * The sandbox's server-rendered pages (and billing's return pages, which share the look): tiny, no scripts,
 * no external assets, readable on a 375 px phone. Every interpolated value goes through `esc`.
 */

export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() }).format(amount / 100);
  } catch {
    return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
}

function day(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(0, 10);
}

// overflow-wrap:anywhere lets long ids (cs_test_… is 66 characters of one word) break instead of widening
// the page on a phone; a grid column needs minmax(0, …) to shrink below such a word. Below 34rem the card
// loses its side margins and border.
const STYLE = `
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24;overflow-wrap:anywhere}
main{max-width:32rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #d0d5dc;border-radius:8px}
@media (max-width:34rem){main{margin:0;padding:1.25rem 1rem;border-width:0 0 1px;border-radius:0}}
.sandbox{margin:0;padding:.5rem 1rem;background:#fff3c4;color:#4a3800;text-align:center;font-weight:600}
h1{font-size:1.5rem;margin-top:0}h2{font-size:1.15rem}
dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
button{font:inherit;padding:.5rem 1.1rem;border-radius:6px;border:1px solid #1a4fd6;background:#1a4fd6;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#a11a1a;border-color:#a11a1a}
select{font:inherit;padding:.35rem}
a{color:#1a4fd6}
a:focus-visible,button:focus-visible,select:focus-visible{outline:3px solid #f5a300;outline-offset:2px}
form{margin:1rem 0}.actions{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
.error{border-left:4px solid #a11a1a;padding-left:1rem}`;

/** A whole page: the shared style, a viewport for phones, `note` as a banner above the content. */
export function htmlPage(title: string, body: string, note?: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body>${note ? `<p class="sandbox" role="note">${esc(note)}</p>` : ''}
<main>
${body}
</main></body></html>`;
}

export function layout(title: string, body: string): string {
  return htmlPage(`${title} · Sandbox payments`, body, 'Sandbox — no real payment');
}

export function checkoutPage(s: SandboxCheckoutSession): string {
  const price = money(s.amountTotal, s.currency);
  if (s.status === 'complete') {
    return layout(
      'Already paid',
      `<h1>This checkout is already paid</h1>
<p>The ${esc(s.tier)} subscription was bought with this session.</p>
<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay"><button type="submit">Continue</button></form>`,
    );
  }
  return layout(
    `Subscribe to ${s.tier}`,
    `<h1>Subscribe to ${esc(s.tier)}</h1>
<dl>
<dt>Plan</dt><dd>${esc(s.tier)}</dd>
<dt>Price</dt><dd>${esc(price)} per month</dd>
<dt>Session</dt><dd><code>${esc(s.id)}</code></dd>
</dl>
<p>Paying here completes the checkout and sends the signed <code>customer.subscription.created</code> and
<code>invoice.payment_succeeded</code> events to this service's webhook endpoint.</p>
<form method="post" action="/sandbox/checkout/${esc(s.id)}/pay" class="actions">
<button type="submit">Pay ${esc(price)}</button>
<a href="${esc(s.cancelUrl)}">Cancel and return</a>
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

export function portalPage(portal: SandboxPortalSession, subs: PortalSubscription[], paidTiers: string[]): string {
  const base = `/sandbox/portal/${esc(portal.id)}/subscriptions`;
  const sections = subs.map((sub) => {
    const field = `tier-${esc(sub.id)}`;
    const options = paidTiers
      .map((t) => `<option value="${esc(t)}"${t === sub.tier ? ' selected' : ''}>${esc(t)}</option>`)
      .join('');
    return `<section aria-labelledby="h-${esc(sub.id)}">
<h2 id="h-${esc(sub.id)}">${esc(sub.tier)} plan (${esc(sub.status)})</h2>
<p>Renews on ${esc(day(sub.currentPeriodEnd))}. Subscription <code>${esc(sub.id)}</code>.</p>
<form method="post" action="${base}/${esc(sub.id)}/tier" class="actions">
<label for="${field}">New tier</label>
<select id="${field}" name="tier">${options}</select>
<button type="submit">Switch tier</button>
</form>
<form method="post" action="${base}/${esc(sub.id)}/cancel">
<button type="submit" class="secondary">Cancel subscription</button>
</form>
</section>`;
  });
  return layout(
    'Manage subscription',
    `<h1>Manage your subscription</h1>
${sections.length ? sections.join('\n') : '<p>This customer has no active subscription.</p>'}
<p><a href="${esc(portal.returnUrl)}">Return without changes</a></p>`,
  );
}

export function invoicePage(i: SandboxInvoice): string {
  return layout(
    `Invoice ${i.id}`,
    `<h1>Invoice ${esc(i.id)}</h1>
<dl>
<dt>Status</dt><dd>paid</dd>
<dt>Plan</dt><dd>${esc(i.tier)}</dd>
<dt>Amount</dt><dd>${esc(money(i.amountPaid, i.currency))}</dd>
<dt>Period</dt><dd>${esc(day(i.periodStart))} to ${esc(day(i.periodEnd))}</dd>
<dt>Paid on</dt><dd>${esc(day(i.paidAt))}</dd>
</dl>`,
  );
}

export function messagePage(title: string, text: string, link?: { href: string; label: string }): string {
  return layout(title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>${link ? `<p><a href="${esc(link.href)}">${esc(link.label)}</a></p>` : ''}`);
}
