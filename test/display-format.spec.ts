import { formatDate, formatDateTime, formatMoney, formatNumber, formatPercent } from '../src/common/display-format';

describe('display formatting (console and sandbox pages)', () => {
  it('writes numbers with separators', () => {
    expect(formatNumber(10_000_000)).toBe('10,000,000');
    expect(formatNumber(0)).toBe('0');
    expect(formatPercent(0.125)).toBe('13%');
    expect(formatPercent(1)).toBe('100%');
  });

  it("writes the provider's minor units in the currency's major unit, with its own number of decimals", () => {
    expect(formatMoney(2900, 'eur')).toBe('€29.00');
    expect(formatMoney(89100, 'EUR')).toBe('€891.00');
    expect(formatMoney(123456789, 'usd')).toBe('US$1,234,567.89');
    expect(formatMoney(500, 'jpy')).toBe('JP¥500');
    expect(formatMoney(-1250, 'gbp')).toBe('-£12.50');
    expect(formatMoney(2900, 'e$')).toBe('2,900 E$ (minor units)');
  });

  it('writes times in UTC, from a Date, an ISO string or Unix seconds', () => {
    expect(formatDate(1_763_078_400)).toBe('14 Nov 2025');
    expect(formatDate('2025-11-14T23:30:00-02:00')).toBe('15 Nov 2025');
    expect(formatDateTime(new Date('2025-11-14T19:20:00Z'))).toBe('14 Nov 2025, 19:20 UTC');
    expect(formatDate(null)).toBe('—');
    expect(formatDateTime('not a time')).toBe('—');
  });
});
