import { Injectable } from '@nestjs/common';
import { Eta } from 'eta';
import { formatDate, formatDateTime, formatMoney, formatNumber, formatPercent } from '../common/display-format';
import { esc } from '../common/html-page';
import type { Operator } from './console-auth.service';
import { actorText, eventWords } from './console-text';
import { TEMPLATES } from './templates';

/** A notice shown at the top of a page: what an action did, or why it was refused. */
export interface Flash {
  kind: 'done' | 'refused';
  text: string;
}

export interface PageData {
  title: string;
  operator?: Operator;
  flash?: Flash;
  /** The navigation entry of this page. */
  section?: string;
  /** Loads the chart library and the console's script (the overview's chart). */
  chart?: boolean;
  [key: string]: unknown;
}

export const NAV = [
  { section: 'overview', href: '/console', label: 'Overview' },
  { section: 'organisations', href: '/console/organisations', label: 'Organisations' },
  { section: 'events', href: '/console/events', label: 'Webhook events' },
  { section: 'notifications', href: '/console/notifications', label: 'Notifications' },
  { section: 'plans', href: '/console/plans', label: 'Plans' },
  { section: 'reconciliation', href: '/console/reconciliation', label: 'Reconciliation' },
  { section: 'audit', href: '/console/audit', label: 'Audit log' },
];

/** Formatting the templates share (data in, text out; Eta escapes what they print), one way on every page. */
const helpers = {
  nav: NAV,
  /** A time as `24 Nov 2026, 19:20 UTC`; accepts a Date, an ISO string or Unix seconds. */
  when: formatDateTime,
  /** A day as `24 Nov 2026` (UTC). */
  day: formatDate,
  /** `10,000,000`. */
  num: formatNumber,
  /** The provider's minor units in the currency's major unit: 89100 eur → `€891.00` (display only). */
  money: formatMoney,
  /**
   * An email (or any text) as HTML, escaped: on a narrow screen it may wrap after its `@`, and nowhere else (not at
   * a hyphen or a dot of its domain).
   */
  email(text: string): string {
    const at = text.lastIndexOf('@');
    if (at < 0) return esc(text);
    return `<span class="nowrap">${esc(text.slice(0, at + 1))}</span><wbr><span class="nowrap">${esc(text.slice(at + 1))}</span>`;
  },
  /**
   * A value of an audited change as HTML, escaped: one long word (an id such as `msg_` and 32 hex digits) is shown as
   * a copyable id, in the small type that keeps it on one line of a 375 px card.
   */
  value(text: string | null): string {
    if (text === null) return '';
    return /^\S{20,}$/.test(text) ? `<code class="id">${esc(text)}</code>` : esc(text);
  },
  /** Who started something, in words: an operator's email, "the CLI", "the schedule" (no ids to look up here). */
  who(actor: string): string {
    return actorText(actor, new Map()).text;
  },
  /** A webhook event's type in words: `invoice.payment_succeeded` → "invoice paid". */
  eventWords,
  /** How much of a limit is used, `12%` (a limit of 0 with any use is full). */
  percent(used: number, limit: number): string {
    return formatPercent(limit > 0 ? Math.min(1, used / limit) : used > 0 ? 1 : 0);
  },
  params(params: Record<string, string | number | undefined | null>): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
    const text = search.toString();
    return text ? `?${text}` : '';
  },
};

/**
 * The console's pages, rendered by Eta from the templates in templates.ts (compiled once, at start). Every
 * `<%= %>` is HTML-escaped; `<%~ %>` (raw) is used only for the layout's body, the partials, and the HTML
 * `h.email` escapes itself.
 */
@Injectable()
export class ConsoleViews {
  private readonly eta = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });

  constructor() {
    for (const [name, template] of Object.entries(TEMPLATES)) this.eta.loadTemplate(`@${name}`, template);
  }

  render(template: keyof typeof TEMPLATES, data: PageData): string {
    return this.eta.render(`@${template}`, { ...data, h: helpers });
  }
}
