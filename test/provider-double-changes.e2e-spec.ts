import Stripe from 'stripe';
import { FAKE_SECRET_KEY, FakeProvider } from './support/fake-provider';
import { subscriptionObject } from './support/provider-events';
import { startSubscriptionDouble } from './support/subscribed';

/**
 * The strict double's subscription changes, through the real SDK: the provider's parameter checks and errors
 * (what the service's change routes meet), its proration, and the events it sends.
 */
describe('the provider double changes subscriptions like the provider', () => {
  let fake: FakeProvider;
  let stripe: Stripe;
  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    const url = new URL(fake.url);
    stripe = new Stripe(FAKE_SECRET_KEY, { host: url.hostname, port: url.port, protocol: 'http', maxNetworkRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.queuedEvents.length = 0;
  });

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: Stripe.errors.StripeError) => ({ status: err.statusCode, type: err.type, code: err.code, param: err.param }),
    );
  /** A subscription of `price` × `quantity` at the double, 10 days into its 30. */
  const subscription = (price = 'team_month', quantity = 3) => {
    const start = Math.floor(Date.now() / 1000) - 10 * 86_400;
    const sub = subscriptionObject({ price, quantity, periodStart: start, periodEnd: start + 30 * 86_400 });
    sub.items.data[0].price = structuredClone(fake.prices.get(price));
    return fake.addSubscription({ ...sub, schedule: null, pending_update: null, automatic_tax: { enabled: false } });
  };

  it('refuses unknown and mistyped parameters, unknown prices, items and subscriptions, naming the param', async () => {
    const sub = subscription();
    const item = sub.items.data[0].id;
    const update = (params: Record<string, unknown>) => refusal(stripe.subscriptions.update(sub.id, params as Stripe.SubscriptionUpdateParams));
    expect(await update({ coupon_code: 'x' })).toMatchObject({ status: 400, code: 'parameter_unknown', param: 'coupon_code' });
    expect(await update({ proration_behavior: 'sometimes' })).toMatchObject({ status: 400, param: 'proration_behavior' });
    expect(await update({ items: [{ id: item, price: 'price_nope' }] })).toMatchObject({ status: 400, code: 'resource_missing', param: 'items[0][price]' });
    expect(await update({ items: [{ id: 'si_nope', quantity: 2 }] })).toMatchObject({ status: 400, code: 'resource_missing', param: 'items[0][id]' });
    expect(await refusal(stripe.subscriptions.update('sub_nope', { cancel_at_period_end: true }))).toMatchObject({ status: 404, code: 'resource_missing' });
    expect(await refusal(stripe.invoices.createPreview({ subscription: 'sub_nope' }))).toMatchObject({ status: 400, code: 'resource_missing', param: 'subscription' });
    expect(s(fake.subscriptions.get(sub.id)!)).toEqual(s(sub));
    expect(fake.queuedEvents).toEqual([]);
  });

  it('prorates an upgrade by the second and invoices it at once; a preview of the same second answers the same amount', async () => {
    const sub = subscription('team_month', 3);
    const item = sub.items.data[0].id;
    const at = Math.floor(Date.now() / 1000);
    const preview = await stripe.invoices.createPreview({
      subscription: sub.id,
      subscription_details: { items: [{ id: item, price: 'team_month', quantity: 5 }], proration_behavior: 'always_invoice', proration_date: at },
    });
    const updated = await stripe.subscriptions.update(sub.id, {
      items: [{ id: item, price: 'team_month', quantity: 5 }],
      proration_behavior: 'always_invoice',
      payment_behavior: 'pending_if_incomplete',
      proration_date: at,
    });
    expect(updated.items.data[0].quantity).toBe(5);
    const paid = fake.queuedEvents.find((e) => e.type === 'invoice.paid')!.data.object;
    expect(paid.amount_paid).toBe(preview.amount_due);
    // 20 of 30 days left: 2 more seats of 1000 for two thirds of the period.
    expect(preview.amount_due).toBe(Math.round(5000 * (sub.items.data[0].current_period_end - at) / (30 * 86_400)) - Math.round(3000 * (sub.items.data[0].current_period_end - at) / (30 * 86_400)));
    expect(fake.queuedEvents.map((e) => e.type)).toEqual(['customer.subscription.updated', 'invoice.paid', 'invoice.payment_succeeded']);
  });

  it('a declined card: pending_if_incomplete keeps the items and records a pending_update; error_if_incomplete is 402', async () => {
    const sub = subscription('team_month', 3);
    fake.declineCards(sub.customer);
    const item = sub.items.data[0].id;
    const params = { items: [{ id: item, quantity: 6 }], proration_behavior: 'always_invoice' as const };
    const kept = await stripe.subscriptions.update(sub.id, { ...params, payment_behavior: 'pending_if_incomplete' });
    expect(kept.items.data[0].quantity).toBe(3);
    expect(kept.pending_update?.subscription_items?.[0].quantity).toBe(6);
    expect(await refusal(stripe.subscriptions.update(sub.id, { ...params, payment_behavior: 'error_if_incomplete' }))).toMatchObject({
      status: 402,
      type: 'StripeCardError',
      code: 'card_declined',
    });
  });

  it('schedules from a subscription alone, keeps the current phase, refuses a second schedule and a cancellation, releases once', async () => {
    const sub = subscription('team_month', 3);
    expect(await refusal(stripe.subscriptionSchedules.create({ from_subscription: sub.id, end_behavior: 'release' }))).toMatchObject({
      status: 400,
      param: 'end_behavior',
    });
    const schedule = await stripe.subscriptionSchedules.create({ from_subscription: sub.id });
    expect(await refusal(stripe.subscriptionSchedules.create({ from_subscription: sub.id }))).toMatchObject({ status: 400, param: 'from_subscription' });
    expect(await refusal(stripe.subscriptions.update(sub.id, { cancel_at_period_end: true }))).toMatchObject({ status: 400 });
    const [current] = schedule.phases;
    expect(
      await refusal(
        stripe.subscriptionSchedules.update(schedule.id, { phases: [{ items: [{ price: 'team_month', quantity: 3 }], start_date: current.start_date + 1 }] }),
      ),
    ).toMatchObject({ status: 400, param: 'phases[0][start_date]' });
    const phases = [
      { items: [{ price: 'team_month', quantity: 3 }], start_date: current.start_date, end_date: current.end_date },
      { items: [{ price: 'pro_month', quantity: 1 }] },
    ];
    const updated = await stripe.subscriptionSchedules.update(schedule.id, { end_behavior: 'release', proration_behavior: 'none', phases });
    expect(updated.phases.map((p) => [p.items[0].price, p.start_date])).toEqual([
      ['team_month', current.start_date],
      ['pro_month', current.end_date],
    ]);
    const released = await stripe.subscriptionSchedules.release(schedule.id);
    expect(released).toMatchObject({ status: 'released', subscription: null, released_subscription: sub.id });
    expect(await refusal(stripe.subscriptionSchedules.release(schedule.id))).toMatchObject({ status: 400 });
    expect(fake.subscriptions.get(sub.id)!.schedule).toBeNull();
    expect(fake.queuedEvents.map((e) => e.type)).toEqual([
      'subscription_schedule.created',
      'customer.subscription.updated',
      'subscription_schedule.updated',
      'subscription_schedule.released',
      'customer.subscription.updated',
    ]);
  });
});

/** A subscription's fields a refused request must leave as they were. */
const s = (sub: Record<string, any>) => ({ items: sub.items, cancel_at_period_end: sub.cancel_at_period_end, schedule: sub.schedule });
