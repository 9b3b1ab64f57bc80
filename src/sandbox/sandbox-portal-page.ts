import { esc } from '../common/html-page';
import { SandboxInterval } from './provider-events';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { SandboxSchedule } from './sandbox-schedule.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';
import { day, layout, planTotal } from './sandbox-pages';

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

/**
 * The sandbox's billing portal: per live subscription, change plan, interval and seats (an upgrade holds now and
 * is invoiced prorated; a downgrade waits for the period's end), cancel at the period's end or resume, give up a
 * pending change, or cancel at once. Forms only, no script (the service's CSP allows none).
 */
export function portalPage(portal: SandboxPortalSession, subs: PortalSubscription[], tiers: PortalTier[]): string {
  const sections = subs.map((s) => subscriptionSection(`/sandbox/portal/${esc(portal.id)}/subscriptions/${esc(s.sub.id)}`, s, tiers));
  return layout(
    'Manage subscription',
    `<h1>Manage your subscription</h1>
${sections.length ? sections.join('\n') : '<p>This customer has no active subscription.</p>'}
<p><a href="${esc(portal.returnUrl)}">Return without changes</a></p>`,
  );
}

function subscriptionSection(base: string, { sub, today, pending }: PortalSubscription, tiers: PortalTier[]): string {
  const id = esc(sub.id);
  const perSeat = tiers.find((t) => t.tier === sub.tier)?.perSeat ?? false;
  const maxSeats = Math.max(1, ...tiers.filter((t) => t.perSeat).map((t) => t.maxSeats));
  const plans = tiers.map((t) => `<option value="${esc(t.tier)}"${t.tier === sub.tier ? ' selected' : ''}>${esc(t.tier)}</option>`).join('');
  const intervals = (['month', 'year'] as SandboxInterval[])
    .map((i) => `<option value="${i}"${i === sub.interval ? ' selected' : ''}>${i === 'year' ? 'yearly' : 'monthly'}</option>`)
    .join('');
  const ends = sub.cancelAtPeriodEnd ? 'Ends on' : sub.status === 'trialing' ? 'Trial ends on' : 'Renews on';
  const details = [
    `<dt>Price</dt><dd>${esc(planTotal(sub, perSeat))}</dd>`,
    `<dt>${ends}</dt><dd>${esc(day(sub.currentPeriodEnd))}</dd>`,
    `<dt>Card</dt><dd>${sub.defaultPaymentMethod ? 'on file' : 'none'}</dd>`,
    `<dt>Today</dt><dd>${esc(day(today))}${sub.clockOffset ? ' (test clock)' : ''}</dd>`,
  ];
  if (pending) {
    details.push(`<dt>Pending change</dt><dd>${esc(pending.next.tier)}, ${esc(planTotal(pending.next, tiers.find((t) => t.tier === pending.next.tier)?.perSeat ?? false))}, from ${esc(day(pending.changeAt))}</dd>`);
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
<form method="post" action="${base}/change">
<fieldset><legend>Change plan</legend>
<p><label for="tier-${id}">Plan</label><select id="tier-${id}" name="tier">${plans}</select></p>
<p><label for="interval-${id}">Billing</label><select id="interval-${id}" name="interval">${intervals}</select></p>
<p><label for="seats-${id}">Seats</label><input id="seats-${id}" name="seats" type="number" min="1" max="${maxSeats}" value="${esc(sub.quantity)}" required></p>
<p class="note">A bigger plan, more seats or yearly billing holds now, charged prorated to the second; a smaller one waits for the end of the period. Seats count only for plans sold per seat.</p>
<button type="submit">Change plan</button>
</fieldset>
</form>
${keepOrEnd}
<form method="post" action="${base}/cancel-now"><button type="submit" class="secondary">Cancel now</button></form>
</section>`;
}
