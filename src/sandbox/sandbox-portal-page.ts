import { formatDate } from '../common/display-format';
import { planLabel, SandboxInterval, SandboxPlan } from './provider-events';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { SandboxSchedule } from './sandbox-schedule.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';
import { SandboxPreview } from './sandbox-subscriptions';
import { esc } from '../common/html-page';
import { layout, money, planTotal, priceText } from './sandbox-pages';

/** A paid tier as the portal offers it. */
export interface PortalTier {
  tier: string;
  perSeat: boolean;
  maxSeats: number;
}

/** A live subscription as the portal shows it: its row, its clock's date, and the change a schedule holds. */
export interface PortalSubscription {
  sub: SandboxSubscription;
  today: number;
  pending: SandboxSchedule | undefined;
}

/** What the portal did last, said at the top of the page it returns to. */
export const PORTAL_OUTCOMES = {
  changed: 'Your plan was changed.',
  scheduled: 'Your change is scheduled for the end of the current period.',
  canceled: 'Your subscription will end at the end of the current period.',
  resumed: 'Your subscription renews again.',
  released: 'The pending change was given up: your plan stays as it is.',
  ended: 'Your subscription was canceled.',
  declining: 'The next automatic charge on your saved card will be declined (once).',
} as const;
export type PortalOutcome = keyof typeof PORTAL_OUTCOMES;

/** A change as reviewed before it is confirmed: the plans, when it holds, and the provider's preview of the charge. */
export interface PortalReview {
  current: SandboxPlan;
  next: SandboxPlan;
  when: 'now' | 'period_end';
  preview: SandboxPreview;
  /** Real time (the service's clock), the proration date the confirmation carries so that the charge is the one shown. */
  prorationDate: number;
  trialing: boolean;
}

const intervalWord = (i: SandboxInterval) => (i === 'year' ? 'yearly' : 'monthly');
const perSeatOf = (tiers: PortalTier[], tier: string) => tiers.find((t) => t.tier === tier)?.perSeat ?? false;

/**
 * The sandbox's billing portal: per live subscription, its plan, then every plan it can change to (seats asked only
 * for a plan sold per seat), each leading to a review of the provider's preview before anything is charged; cancel
 * at the period's end or resume, give up a pending change, or cancel at once (after a confirmation). Forms only, no
 * script. After a change the portal comes back here, saying what it did.
 */
export function portalPage(
  portal: SandboxPortalSession,
  subs: PortalSubscription[],
  tiers: PortalTier[],
  outcome?: PortalOutcome,
  card?: { paymentMethod: string | null; declineNext: boolean },
): string {
  const base = `/sandbox/portal/${esc(portal.id)}`;
  const sections = subs.map((s) => subscriptionSection(`${base}/subscriptions/${esc(s.sub.id)}`, s, tiers));
  return layout(
    'Manage subscription',
    `<h1>Manage your subscription</h1>
${outcome ? `<p class="done" role="status">${esc(PORTAL_OUTCOMES[outcome])}</p>\n` : ''}${sections.length ? sections.join('\n') : '<p>This customer has no active subscription.</p>'}
${card ? cardSection(base, card) : ''}
<p><a href="${esc(portal.returnUrl)}">Return to the application</a></p>`,
  );
}

/** The saved card (automatic top-ups pay with it), and the button that makes its next charge fail, to try that path. */
function cardSection(base: string, card: { paymentMethod: string | null; declineNext: boolean }): string {
  if (!card.paymentMethod) return `<section aria-labelledby="card"><h2 id="card">Payment method</h2><p>No card saved: automatic top-ups cannot be paid.</p></section>`;
  const action = card.declineNext
    ? '<p>The next automatic charge will be declined.</p>'
    : `<form method="post" action="${base}/decline-next-charge"><button type="submit" class="secondary">Decline the next charge</button></form>`;
  return `<section aria-labelledby="card"><h2 id="card">Payment method</h2><p>Card ${esc(card.paymentMethod)} (default; automatic top-ups are paid with it).</p>
${action}</section>`;
}

function subscriptionSection(base: string, { sub, today, pending }: PortalSubscription, tiers: PortalTier[]): string {
  const id = esc(sub.id);
  const ends = sub.cancelAtPeriodEnd ? 'Ends on' : sub.status === 'trialing' ? 'Trial ends on' : 'Renews on';
  const details = [
    `<dt>Plan</dt><dd>${esc(planLabel(sub))}</dd>`,
    `<dt>Price</dt><dd>${esc(planTotal(sub, perSeatOf(tiers, sub.tier), sub.currency))}</dd>`,
    `<dt>${ends}</dt><dd>${esc(formatDate(sub.currentPeriodEnd))}</dd>`,
    `<dt>Card</dt><dd>${sub.defaultPaymentMethod ? 'on file' : 'none'}</dd>`,
    `<dt>Today</dt><dd>${esc(formatDate(today))}${sub.clockOffset ? ' (test clock)' : ''}</dd>`,
  ];
  if (pending) {
    details.push(`<dt>Pending change</dt><dd>${esc(pending.next.tier)}, ${esc(planTotal(pending.next, perSeatOf(tiers, pending.next.tier), sub.currency))}, from ${esc(formatDate(pending.changeAt))}</dd>`);
  }
  const keepOrEnd = sub.cancelAtPeriodEnd
    ? `<form method="post" action="${base}/resume"><button type="submit">Resume subscription</button></form>`
    : pending
      ? `<form method="post" action="${base}/release"><button type="submit" class="plain">Keep the current plan</button></form>`
      : `<form method="post" action="${base}/cancel"><button type="submit" class="secondary">Cancel at period end</button></form>`;
  return `<section aria-labelledby="h-${id}">
<h2 id="h-${id}">${esc(sub.tier)} plan (${esc(sub.status)})</h2>
<dl>
${details.join('\n')}
</dl>
<p class="note">Subscription <code>${id}</code>.</p>
<h3>Change plan</h3>
<p class="note">A bigger plan, more seats or yearly billing holds now, charged prorated to the second; a smaller one waits for the end of the period. You see the amount before anything is charged.</p>
<ul class="plans">
${tiers.map((t) => planChoice(base, sub, t)).join('\n')}
</ul>
<div class="actions">
${keepOrEnd}
<a class="button secondary" href="${base}/cancel-now">Cancel now</a>
</div>
</section>`;
}

/** One plan the subscription can change to: its prices, billing, seats when sold per seat, and a button to review it. */
function planChoice(base: string, sub: SandboxSubscription, t: PortalTier): string {
  const key = `${esc(sub.id)}-${esc(t.tier)}`;
  const current = t.tier === sub.tier;
  const intervals = (['month', 'year'] as SandboxInterval[])
    .map((i) => `<option value="${i}"${i === sub.interval ? ' selected' : ''}>${intervalWord(i)}, ${esc(priceText(t.tier, i, t.perSeat, sub.currency))}</option>`)
    .join('');
  const seats = t.perSeat
    ? `\n<p><label for="seats-${key}">Seats</label> <input id="seats-${key}" name="seats" type="number" inputmode="numeric" min="1" max="${t.maxSeats}" value="${esc(current ? sub.quantity : 1)}" required></p>`
    : '';
  return `<li><form method="get" action="${base}/change" aria-labelledby="plan-${key}">
<input type="hidden" name="tier" value="${esc(t.tier)}">
<h4 id="plan-${key}">${esc(t.tier)}${current ? ' (your plan)' : ''}</h4>
<p><label for="interval-${key}">Billing</label> <select id="interval-${key}" name="interval">${intervals}</select></p>${seats}
<button type="submit" class="plain">${current ? `Change ${esc(t.tier)}` : `Switch to ${esc(t.tier)}`}</button>
</form></li>`;
}

/**
 * The review of a change before it is made: the provider's preview (the amount due now, with its lines; or, for a
 * change at the period's end, from when it holds and what it will cost), and the button that makes it. The form
 * carries the plan, when it holds, the proration date and the amount shown, so that what is charged is what was
 * shown (else nothing is).
 */
export function changeReviewPage(portal: SandboxPortalSession, subId: string, review: PortalReview, tiers: PortalTier[], changedSince = false): string {
  const base = `/sandbox/portal/${esc(portal.id)}/subscriptions/${esc(subId)}`;
  const { current, next, preview } = review;
  const { currency } = preview;
  const now = review.when === 'now';
  const due = money(preview.amountDue, currency);
  const lines = preview.lines
    .map((l) => `<tr><td>${esc(l.description)}</td><td>${esc(money(l.amount, currency))}</td></tr>`)
    .join('\n');
  const summary = now
    ? `<p class="total">Due now: <strong>${esc(due)}</strong>${review.trialing ? ' (the trial is free whatever the plan)' : ''}</p>
${lines ? `<table><caption>What the invoice charges</caption>\n${lines}\n</table>\n` : ''}<p>Then ${esc(planTotal(next, perSeatOf(tiers, next.tier), currency))} from ${esc(formatDate(preview.periodEnd))}.</p>`
    : `<p class="total">From <strong>${esc(formatDate(preview.effectiveAt))}</strong>: ${esc(planTotal(next, perSeatOf(tiers, next.tier), currency))}.</p>
<p>Nothing is charged now: your current plan stays until then.</p>`;
  const hidden = [
    ['tier', next.tier],
    ['interval', next.interval],
    ['seats', String(next.quantity)],
    ['when', review.when],
    ...(now ? [['proration_date', String(review.prorationDate)], ['amount_due', String(preview.amountDue)]] : []),
  ]
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${esc(value)}">`)
    .join('\n');
  const confirm = now ? (preview.amountDue > 0 ? `Confirm and pay ${due}` : 'Confirm the change') : `Confirm the change from ${formatDate(preview.effectiveAt)}`;
  return layout(
    'Confirm your change',
    `<h1>Confirm your change</h1>
${changedSince ? '<div class="error" role="alert"><p>Nothing was charged: the subscription changed since the amount was shown. Here is the amount now.</p></div>\n' : ''}<dl>
<dt>Current plan</dt><dd>${esc(planLabel(current))}, ${esc(planTotal(current, perSeatOf(tiers, current.tier), currency))}</dd>
<dt>New plan</dt><dd>${esc(planLabel(next))}, ${esc(planTotal(next, perSeatOf(tiers, next.tier), currency))}</dd>
</dl>
${summary}
<form method="post" action="${base}/change" class="actions">
${hidden}
<button type="submit">${esc(confirm)}</button>
<a href="/sandbox/portal/${esc(portal.id)}">Back without changing</a>
</form>`,
  );
}

/** "Cancel now" asks first: the subscription ends at once, and nothing is refunded. */
export function cancelNowPage(portal: SandboxPortalSession, sub: SandboxSubscription): string {
  const base = `/sandbox/portal/${esc(portal.id)}/subscriptions/${esc(sub.id)}`;
  return layout(
    'Cancel now?',
    `<h1>Cancel your ${esc(sub.tier)} plan now?</h1>
<p>The subscription ends at once, not at the end of the period (${esc(formatDate(sub.currentPeriodEnd))}), and with it
what the ${esc(sub.tier)} plan gives in the application. Nothing is refunded for the time left.</p>
<form method="post" action="${base}/cancel-now" class="actions">
<button type="submit" class="secondary">Cancel the subscription now</button>
<a href="/sandbox/portal/${esc(portal.id)}">Keep my subscription</a>
</form>`,
  );
}
