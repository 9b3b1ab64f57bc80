import { addInterval, SubscriptionState } from '../src/sandbox/provider-events';
import { changeNowCharge, nextPeriodCharge, portalTakesNow } from '../src/sandbox/sandbox-billing';

const DAY = 86_400;
const start = Date.UTC(2026, 3, 1) / 1000; // 1 April 2026: a 30-day month
const sub = (over: Partial<SubscriptionState> = {}): SubscriptionState => ({
  id: 'sub_1',
  customerId: 'cus_1',
  itemId: 'si_1',
  currency: 'eur',
  tier: 'pro',
  interval: 'month',
  quantity: 1,
  status: 'active',
  metadata: {},
  created: start,
  periodStart: start,
  periodEnd: addInterval(start, 'month'),
  canceledAt: null,
  trialStart: null,
  trialEnd: null,
  cancelAtPeriodEnd: false,
  defaultPaymentMethod: 'pm_1',
  missingPaymentMethod: 'create_invoice',
  scheduleId: null,
  ...over,
});

/** The sandbox's own money (spec §11.6): proration by the second, as the provider computes it. */
describe('sandbox proration and periods', () => {
  it('prorates an upgrade over what is left of the period: a credit for the old plan, a charge for the new', () => {
    const half = changeNowCharge(sub(), { tier: 'team', interval: 'month', quantity: 1 }, start + 15 * DAY);
    expect(half.lines.map((l) => [l.amount, l.proration, l.description])).toEqual([
      [-1450, true, 'Unused time on 1 × pro (monthly) after 16 Apr 2026'],
      [4950, true, 'Remaining time on 1 × team (monthly) after 16 Apr 2026'],
    ]);
    expect(half.amountDue).toBe(3500);
    expect([half.periodStart, half.periodEnd]).toEqual([start, start + 30 * DAY]);
  });

  it('is exact to the second, each line rounded to the cent', () => {
    // One second short of the end of a 30-day month: 1/2,592,000 of the price is left (19,800 → 0.008; 3,960,000 → 1.5).
    const late = changeNowCharge(sub({ tier: 'team', quantity: 2 }), { tier: 'team', interval: 'month', quantity: 400 }, start + 30 * DAY - 1);
    expect(late.lines.map((l) => l.amount)).toEqual([0, 2]);
    expect(Object.is(late.lines[0].amount, -0)).toBe(false);
    const oneThird = changeNowCharge(sub({ tier: 'team', quantity: 3 }), { tier: 'team', interval: 'month', quantity: 4 }, start + 20 * DAY);
    expect(oneThird.lines.map((l) => l.amount)).toEqual([-9900, 13200]);
    expect(oneThird.amountDue).toBe(3300);
  });

  it('monthly to yearly starts a new period now: the full year less the unused month', () => {
    const at = start + 10 * DAY;
    const yearly = changeNowCharge(sub(), { tier: 'pro', interval: 'year', quantity: 1 }, at);
    expect(yearly.lines.map((l) => [l.amount, l.proration])).toEqual([
      [-1933, true],
      [29000, false],
    ]);
    expect(yearly.amountDue).toBe(27067);
    expect([yearly.periodStart, yearly.periodEnd]).toEqual([at, Date.UTC(2027, 3, 11) / 1000]);
  });

  it('charges nothing during a trial, and never less than nothing', () => {
    const trial = changeNowCharge(sub({ status: 'trialing' }), { tier: 'team', interval: 'month', quantity: 5 }, start + DAY);
    expect(trial).toEqual({ lines: [], amountDue: 0, periodStart: start, periodEnd: start + 30 * DAY });
    const cheaper = changeNowCharge(sub({ tier: 'team', quantity: 5 }), { tier: 'enterprise', interval: 'month', quantity: 1 }, start);
    expect(cheaper.lines.map((l) => l.amount)).toEqual([-49500, 49900]);
    const credit = changeNowCharge(sub({ tier: 'team', quantity: 9 }), { tier: 'enterprise', interval: 'month', quantity: 1 }, start);
    expect(credit.amountDue).toBe(0);
  });

  it("a change at the period's end is invoiced as the next period of the new plan", () => {
    const next = nextPeriodCharge(sub({ tier: 'team', quantity: 3 }), { tier: 'team', interval: 'month', quantity: 2 });
    expect(next.lines).toEqual([expect.objectContaining({ amount: 19800, proration: false, description: '2 × team (monthly)' })]);
    expect([next.periodStart, next.periodEnd]).toEqual([Date.UTC(2026, 4, 1) / 1000, Date.UTC(2026, 5, 1) / 1000]);
  });

  it('a year is twelve calendar months: 29 February renews on 28 February', () => {
    expect(addInterval(Date.UTC(2028, 1, 29) / 1000, 'year')).toBe(Date.UTC(2029, 1, 28) / 1000);
    expect(addInterval(Date.UTC(2026, 0, 31) / 1000, 'month')).toBe(Date.UTC(2026, 1, 28) / 1000);
  });

  it("the portal takes a change now when any part is bigger, else at the period's end", () => {
    const order = ['pro', 'team', 'enterprise'];
    const plan = (tier: string, quantity = 1, interval: 'month' | 'year' = 'month') => ({ tier, interval, quantity });
    expect(portalTakesNow(plan('pro'), plan('team'), order)).toBe(true);
    expect(portalTakesNow(plan('team', 5), plan('enterprise', 1), order)).toBe(true);
    expect(portalTakesNow(plan('team', 5), plan('team', 6), order)).toBe(true);
    expect(portalTakesNow(plan('team', 5, 'year'), plan('team', 6, 'month'), order)).toBe(true);
    expect(portalTakesNow(plan('pro'), plan('pro', 1, 'year'), order)).toBe(true);
    expect(portalTakesNow(plan('team', 5), plan('team', 4), order)).toBe(false);
    expect(portalTakesNow(plan('team'), plan('pro'), order)).toBe(false);
    expect(portalTakesNow(plan('pro', 1, 'year'), plan('pro'), order)).toBe(false);
  });
});
