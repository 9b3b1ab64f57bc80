import Stripe from 'stripe';
import { FAKE_SECRET_KEY, FakeProvider, startFakeProvider } from './support/fake-provider';
import { providerEvent, subscriptionObject } from './support/provider-events';

/** The strict double's lists, through the real SDK: the provider's list semantics (what the reconciliation walks). */
describe('the provider double lists like the provider', () => {
  let fake: FakeProvider;
  let stripe: Stripe;
  beforeAll(async () => {
    fake = await startFakeProvider();
    const url = new URL(fake.url);
    stripe = new Stripe(FAKE_SECRET_KEY, { host: url.hostname, port: url.port, protocol: 'http', maxNetworkRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  /** Subscriptions created one second apart, oldest first, in these statuses; their ids. */
  const subscriptions = (...statuses: string[]) =>
    statuses.map((status, i) => fake.addSubscription({ ...subscriptionObject({ status }), created: 1_700_000_000 + i }).id as string);
  const ids = (list: { data: { id: string }[] }) => list.data.map((o) => o.id);
  const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err: Stripe.errors.StripeError) => ({ status: err.statusCode, code: err.code, param: err.param }));

  it('lists subscriptions newest first; without status all but canceled ones, with status=all every one', async () => {
    const [active, canceled, pastDue, expired] = subscriptions('active', 'canceled', 'past_due', 'incomplete_expired');
    const page = await stripe.subscriptions.list();
    expect(page).toMatchObject({ object: 'list', has_more: false, url: '/v1/subscriptions' });
    expect(ids(page)).toEqual([expired, pastDue, active]);
    expect(ids(await stripe.subscriptions.list({ status: 'all' }))).toEqual([expired, pastDue, canceled, active]);
    expect(ids(await stripe.subscriptions.list({ status: 'ended' }))).toEqual([expired, canceled]);
    expect(ids(await stripe.subscriptions.list({ status: 'past_due' }))).toEqual([pastDue]);
  });

  it('pages with limit, starting_after and ending_before, saying has_more', async () => {
    const all = subscriptions('active', 'active', 'active', 'active', 'active').reverse();
    const first = await stripe.subscriptions.list({ limit: 2 });
    expect([ids(first), first.has_more]).toEqual([all.slice(0, 2), true]);
    const last = await stripe.subscriptions.list({ limit: 2, starting_after: all[3] });
    expect([ids(last), last.has_more]).toEqual([[all[4]], false]);
    const before = await stripe.subscriptions.list({ limit: 2, ending_before: all[3] });
    expect([ids(before), before.has_more]).toEqual([all.slice(1, 3), true]);
    expect(await stripe.subscriptions.list({ limit: 3 }).autoPagingToArray({ limit: 10 })).toHaveLength(5);
  });

  it('refuses what the provider refuses, and what it does not implement', async () => {
    const [id] = subscriptions('active');
    expect(await refusal(stripe.subscriptions.list({ limit: 101 }))).toEqual({ status: 400, code: undefined, param: 'limit' });
    expect(await refusal(stripe.subscriptions.list({ status: 'gone' as 'all' }))).toMatchObject({ status: 400, param: 'status' });
    expect(await refusal(stripe.subscriptions.list({ starting_after: 'sub_unknown' }))).toEqual({ status: 400, code: 'resource_missing', param: 'starting_after' });
    expect(await refusal(stripe.subscriptions.list({ starting_after: id, ending_before: id }))).toMatchObject({ status: 400 });
    expect(await refusal(stripe.subscriptions.list({ unknown: 'x' } as object))).toEqual({ status: 400, code: 'parameter_unknown', param: 'unknown' });
    expect(await refusal(stripe.subscriptions.list({ price: 'price_1' }))).toMatchObject({ status: 400, param: 'price' });
  });

  it('lists events by types and created range, newest first', async () => {
    const at = (created: number, type = 'invoice.paid') => {
      const event = providerEvent(type, { id: 'in_1', object: 'invoice' }, { created });
      fake.addEvent(event);
      return event.id;
    };
    const [a, b, , d] = [at(100), at(200), at(300, 'charge.succeeded'), at(400)];
    expect(ids(await stripe.events.list({ types: ['invoice.paid'], created: { gte: 200 } }))).toEqual([d, b]);
    expect(ids(await stripe.events.list({ type: 'invoice.paid', created: { lt: 400, gt: 100 } }))).toEqual([b]);
    expect(ids(await stripe.events.list({ types: ['invoice.paid'], created: { lte: 200 } }))).toEqual([b, a]);
  });

  it('counts the requests of the busiest second', async () => {
    for (let i = 0; i < 5; i++) await stripe.subscriptions.list();
    expect(fake.busiestSecond()).toBe(5);
  });
});
