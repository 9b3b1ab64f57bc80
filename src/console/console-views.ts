import { Injectable } from '@nestjs/common';
import { Eta } from 'eta';
import type { Operator } from './console-auth.service';
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
  { section: 'reconciliation', href: '/console/reconciliation', label: 'Reconciliation' },
  { section: 'audit', href: '/console/audit', label: 'Audit log' },
];

const dateTime = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

/** Formatting the templates share (data in, text out; Eta escapes what they print). */
const helpers = {
  nav: NAV,
  /** A time as `24 Nov 2026, 19:20 UTC`; accepts a Date, an ISO string or Unix seconds. */
  when(value: Date | string | number | null | undefined): string {
    if (value === null || value === undefined) return '—';
    const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
    return Number.isNaN(date.getTime()) ? '—' : `${dateTime.format(date)} UTC`;
  },
  /** Minor units in the currency's major unit, e.g. 1999 eur → `19.99 EUR` (display only). */
  money(amount: number, currency: string): string {
    return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  },
  percent(used: number, limit: number): number {
    return limit > 0 ? Math.min(100, Math.round((used / limit) * 100)) : used > 0 ? 100 : 0;
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
 * `<%= %>` is HTML-escaped; `<%~ %>` (raw) is used only for the layout's body and for attributes built here.
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
