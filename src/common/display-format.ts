/*
 * How the service's pages (the console, the sandbox's hosted pages) write numbers, money and times for people:
 * one locale, UTC, and Intl's formatters, so that `10,000,000`, `€29.00` and `14 Nov 2025` read the same on
 * every page. Display only: amounts are the provider's integers in minor units, never computed here.
 */

const LOCALE = 'en-GB';

const numbers = new Intl.NumberFormat(LOCALE);
const percents = new Intl.NumberFormat(LOCALE, { style: 'percent', maximumFractionDigits: 0 });
const dates = new Intl.DateTimeFormat(LOCALE, { dateStyle: 'medium', timeZone: 'UTC' });
const dateTimes = new Intl.DateTimeFormat(LOCALE, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
const currencies = new Map<string, Intl.NumberFormat | null>();

/** A time as the pages receive it: a Date, an ISO string, or Unix seconds (the provider's). */
export type TimeValue = Date | string | number | null | undefined;

/** `10000000` → `10,000,000`. */
export function formatNumber(value: number): string {
  return numbers.format(value);
}

/** A share of a whole: 0.125 → `13%`. */
export function formatPercent(fraction: number): string {
  return percents.format(fraction);
}

/**
 * An amount in the currency's minor units (the provider's integers) in its major unit with its symbol: 2900 eur →
 * `€29.00`, 500 jpy → `¥500`. The number of minor digits is the currency's own (Intl knows it); a code Intl does not
 * accept is shown after the amount.
 */
export function formatMoney(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  let format = currencies.get(code);
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat(LOCALE, { style: 'currency', currency: code });
    } catch {
      format = null;
    }
    currencies.set(code, format);
  }
  if (!format) return `${numbers.format(amount)} ${code} (minor units)`;
  return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}

/** `14 Nov 2025` (UTC); `—` for none. */
export function formatDate(value: TimeValue): string {
  const date = toDate(value);
  return date ? dates.format(date) : '—';
}

/** `14 Nov 2025, 19:20 UTC`; `—` for none. */
export function formatDateTime(value: TimeValue): string {
  const date = toDate(value);
  return date ? `${dateTimes.format(date)} UTC` : '—';
}

function toDate(value: TimeValue): Date | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
