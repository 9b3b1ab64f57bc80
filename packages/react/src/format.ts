/**
 * Amounts, numbers and dates as the reader's locale writes them, all through `Intl` (nothing is formatted by
 * hand). Amounts arrive as the provider's integer minor units with an ISO currency code.
 */
export interface Formatter {
  /** `2900, 'EUR'` → "€29.00" (en), "29,00 €" (de); `500, 'JPY'` → "¥500". */
  money(minorUnits: number, currency: string): string;
  /** `2000000` → "2,000,000" (en). */
  number(value: number): string;
  /** Unix seconds → "24 Nov 2026" (en-GB), "Nov 24, 2026" (en-US). */
  date(unixSeconds: number): string;
}

export function createFormatter(locale?: string | readonly string[]): Formatter {
  const locales = locale as Intl.LocalesArgument;
  const numbers = new Intl.NumberFormat(locales);
  const dates = new Intl.DateTimeFormat(locales, { dateStyle: 'medium' });
  const currencies = new Map<string, Intl.NumberFormat>();
  return {
    money(minorUnits, currency) {
      const code = currency.toUpperCase();
      let format = currencies.get(code);
      if (!format) {
        format = new Intl.NumberFormat(locales, { style: 'currency', currency: code });
        currencies.set(code, format);
      }
      // The currency's own minor unit (2 for EUR, 0 for JPY, 3 for BHD), as Intl knows it.
      const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
      return format.format(minorUnits / 10 ** digits);
    },
    number: (value) => numbers.format(value),
    date: (unixSeconds) => dates.format(new Date(unixSeconds * 1000)),
  };
}
