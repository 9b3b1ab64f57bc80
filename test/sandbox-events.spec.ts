import Stripe from 'stripe';
import { esc } from '../src/common/html-page';
import { money } from '../src/sandbox/sandbox-pages';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  addMonth,
  invoiceObject,
  periodLine,
  priceObject,
  randomId,
  scheduleObject,
  subscriptionObject,
  SubscriptionState,
} from '../src/sandbox/provider-events';
import { signatureHeader } from '../src/provider/provider-signature';
import { triggerEvent } from '../src/cli/webhook-trigger.command';
import { loadConfig } from '../src/config/app-config';

describe('sandbox provider building blocks', () => {
  it('signs exactly like the provider SDK does', () => {
    const stripe = new Stripe('sk_test_unused');
    const payload = JSON.stringify({ id: 'evt_1', type: 'customer.subscription.created', data: { object: { é: '✓' } } });
    const timestamp = 1_763_800_000;
    const expected = stripe.webhooks.generateTestHeaderString({ payload, secret: 'whsec_abc', timestamp });
    expect(signatureHeader(payload, 'whsec_abc', timestamp)).toBe(expected);
    // …and the SDK's own verifier accepts it.
    expect(() => stripe.webhooks.constructEvent(payload, signatureHeader(payload, 'whsec_abc'), 'whsec_abc')).not.toThrow();
    expect(() => stripe.webhooks.constructEvent(payload, signatureHeader(payload, 'whsec_other'), 'whsec_abc')).toThrow();
  });

  it('makes unguessable ids in the provider alphabet', () => {
    const ids = new Set(Array.from({ length: 500 }, () => randomId('cs_test_', 58)));
    expect(ids.size).toBe(500);
    for (const id of ids) expect(id).toMatch(/^cs_test_[A-Za-z0-9]{58}$/);
  });

  it('escapes every HTML-special character', () => {
    expect(esc(`<a href="x" onclick='y'>&</a>`)).toBe('&#60;a href=&#34;x&#34; onclick=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
    expect(money(2900)).toBe('€29.00');
  });

  it('adds a calendar month, clamped to the end of a shorter month', () => {
    expect(addMonth(Date.UTC(2026, 0, 31, 12) / 1000)).toBe(Date.UTC(2026, 1, 28, 12) / 1000);
    expect(addMonth(Date.UTC(2028, 0, 31) / 1000)).toBe(Date.UTC(2028, 1, 29) / 1000);
    expect(addMonth(Date.UTC(2026, 0, 15) / 1000)).toBe(Date.UTC(2026, 1, 15) / 1000);
    expect(addMonth(Date.UTC(2026, 11, 1) / 1000)).toBe(Date.UTC(2027, 0, 1) / 1000);
  });

  it('webhook:trigger builds provider-shaped events with ids stable per organisation', () => {
    const org = '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11';
    const created = triggerEvent('customer.subscription.created', org, 'team');
    const deleted = triggerEvent('customer.subscription.deleted', org, 'team');
    const sub = created.data.object as any;
    expect(created).toMatchObject({ object: 'event', type: 'customer.subscription.created', livemode: false });
    expect(created.id).toMatch(/^evt_/);
    expect(sub).toMatchObject({
      id: 'sub_trigger_0b7c6a4e8f7e4c529f570a3f8f1d2c11',
      customer: 'cus_trigger_0b7c6a4e8f7e4c529f570a3f8f1d2c11',
      status: 'active',
      metadata: { organisation_id: org, tier: 'team' },
    });
    expect(sub.items.data[0].price).toMatchObject({ metadata: { tier: 'team' }, lookup_key: 'team_monthly', unit_amount: 9900 });
    expect(sub.items.data[0].current_period_end).toBeGreaterThan(sub.items.data[0].current_period_start);
    expect((deleted.data.object as any)).toMatchObject({ id: sub.id, status: 'canceled' });

    const invoice = triggerEvent('invoice.payment_succeeded', org, 'pro').data.object as any;
    expect(invoice).toMatchObject({
      object: 'invoice',
      amount_paid: 2900,
      currency: 'eur',
      status: 'paid',
      parent: { subscription_details: { subscription: sub.id, metadata: { organisation_id: org } } },
    });
    expect(invoice.status_transitions.paid_at).toEqual(expect.any(Number));
    expect(invoice.lines.data[0].period.end).toBeGreaterThan(invoice.lines.data[0].period.start);
  });

  it('PUBLIC_URL must be an origin', () => {
    const env = { PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' };
    expect(loadConfig(env).publicUrl).toBeUndefined();
    expect(loadConfig({ ...env, PUBLIC_URL: 'https://billing.example.test' }).publicUrl?.origin).toBe('https://billing.example.test');
    expect(() => loadConfig({ ...env, PUBLIC_URL: 'ftp://billing.example.test' })).toThrow(/PUBLIC_URL/);
    expect(() => loadConfig({ ...env, PUBLIC_URL: 'https://billing.example.test/sub' })).toThrow(/PUBLIC_URL must be an origin/);
  });
});

/** The provider's own example objects (its API mock's fixtures): every field the sandbox sends, where it sends it. */
describe("sandbox objects have the provider's shape", () => {
  const fixtures = JSON.parse(readFileSync(join(__dirname, 'support', 'provider-fixtures.json'), 'utf8'));
  const plan = { tier: 'team', interval: 'year' as const, quantity: 3 };
  const state: SubscriptionState = {
    id: 'sub_1', customerId: 'cus_1', itemId: 'si_1', ...plan, status: 'trialing', metadata: { organisation_id: 'o' },
    created: 1, periodStart: 1, periodEnd: 2, canceledAt: null, trialStart: 1, trialEnd: 2, cancelAtPeriodEnd: true,
    defaultPaymentMethod: null, missingPaymentMethod: 'cancel', scheduleId: 'sub_sched_1', currency: 'eur',
  };

  /** The key paths of `ours` that `theirs` lacks (arrays: compared with their first element). */
  function extraPaths(ours: unknown, theirs: unknown, path = ''): string[] {
    if (ours === null || typeof ours !== 'object') return [];
    if (Array.isArray(ours)) return ours.flatMap((o) => extraPaths(o, Array.isArray(theirs) ? theirs[0] : undefined, `${path}[]`));
    return Object.entries(ours).flatMap(([k, v]) => {
      const there = (theirs as Record<string, unknown> | undefined)?.[k];
      if (theirs === null || typeof theirs !== 'object' || !(k in (theirs as object))) return [`${path}.${k}`];
      return k === 'metadata' ? [] : extraPaths(v, there, `${path}.${k}`); // metadata: anyone's keys
    });
  }

  it('subscriptions: quantity, the price and its interval, trial, cancel_at_period_end, schedule, where the provider has them', () => {
    const ours = subscriptionObject(state);
    expect(extraPaths(ours, fixtures.subscription)).toEqual([]);
    expect(ours.items.data[0]).toMatchObject({ quantity: 3, price: { recurring: { interval: 'year', interval_count: 1 }, unit_amount: 99000 } });
    expect(ours).toMatchObject({ trial_end: 2, cancel_at_period_end: true, cancel_at: 2, schedule: 'sub_sched_1', trial_settings: { end_behavior: { missing_payment_method: 'cancel' } } });
  });

  it('invoices, with a line per charge', () => {
    const line = periodLine(plan, 1, 2);
    const ours = invoiceObject({
      id: 'in_1', customerId: 'cus_1', subscriptionId: 'sub_1', subscriptionMetadata: {}, itemId: 'si_1', billingReason: 'subscription_cycle',
      lines: [line, { ...line, amount: -5, proration: true }], amountPaid: 297_000 - 5, periodStart: 1, periodEnd: 2, paidAt: 2, hostedInvoiceUrl: null,
    });
    // The fixture's line leaves out `pricing.price_details` (a line's price, in the API reference), which the service reads.
    expect(extraPaths(ours, fixtures.invoice)).toEqual(['.lines.data[].pricing.price_details', '.lines.data[].pricing.price_details']);
    expect(ours.lines.data.map((l: any) => [l.amount, l.quantity, l.parent.subscription_item_details.proration])).toEqual([[297_000, 3, false], [-5, 3, true]]);
  });

  it('prices, and schedules with their phases', () => {
    expect(extraPaths(priceObject('team', 'year'), fixtures.price)).toEqual([]);
    const schedule = scheduleObject({
      id: 'sub_sched_1', subscriptionId: 'sub_1', customerId: 'cus_1', created: 1, current: plan, next: { ...plan, quantity: 2 },
      phaseStart: 1, changeAt: 2, status: 'active', releasedAt: null,
    });
    expect(schedule.phases.map((p) => [p.start_date, p.items[0]])).toEqual([
      [1, expect.objectContaining({ price: 'price_sandbox_team_yearly', quantity: 3 })],
      [2, expect.objectContaining({ price: 'price_sandbox_team_yearly', quantity: 2 })],
    ]);
    expect(schedule).toMatchObject({ object: 'subscription_schedule', status: 'active', subscription: 'sub_1', current_phase: { start_date: 1, end_date: 2 }, end_behavior: 'release' });
  });
});
