import Stripe from 'stripe';
import { FAKE_SECRET_KEY, FakeProvider, startFakeProvider } from './support/fake-provider';

/**
 * The strict double's checkout sessions through the real SDK, as the provider's API description of the pinned
 * version has them: the ids in a path have its limits (a checkout session's retrieve takes 66 characters, the
 * other paths 5000), and `ui_mode` its values (hosted_page by default; the older hosted and embedded refused).
 */
describe('the provider double checks paths and checkout modes like the provider', () => {
  let fake: FakeProvider;
  let stripe: Stripe;
  beforeAll(async () => {
    fake = await startFakeProvider({ prices: ['price_pro'] });
    const url = new URL(fake.url);
    stripe = new Stripe(FAKE_SECRET_KEY, { host: url.hostname, port: url.port, protocol: 'http', maxNetworkRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: Stripe.errors.StripeError) => ({ status: err.statusCode, type: err.type, param: err.param }),
    );
  const checkout = (params: Partial<Stripe.Checkout.SessionCreateParams> = {}) =>
    stripe.checkout.sessions.create({
      mode: 'subscription',
      line_items: [{ price: 'price_pro', quantity: 1 }],
      success_url: 'https://app.example.com/ok',
      ...params,
    });

  it("retrieves a session by an id of 66 characters; a longer id is refused naming the path's session, not looked up", async () => {
    const session = fake.addCheckoutSession({ id: `cs_test_${'a'.repeat(58)}` });
    expect((await stripe.checkout.sessions.retrieve(session.id)).id).toBe(session.id);
    expect(await refusal(stripe.checkout.sessions.retrieve(`${session.id}b`))).toEqual({ status: 400, type: 'StripeInvalidRequestError', param: 'session' });
    expect(await refusal(stripe.checkout.sessions.retrieve(`cs_test_${'b'.repeat(58)}`))).toEqual({
      status: 404,
      type: 'StripeInvalidRequestError',
      param: 'session',
    });
    // Other paths take their ids up to 5000 characters: an unknown one of 67 is simply unknown.
    expect(await refusal(stripe.checkout.sessions.expire(`${session.id}b`))).toMatchObject({ status: 404, param: 'session' });
    expect(await refusal(stripe.customers.retrieve(`cus_${'c'.repeat(5000)}`))).toMatchObject({ status: 400, param: 'customer' });
  });

  it('creates hosted_page sessions (the default), and refuses a ui_mode of an older API version', async () => {
    expect((await checkout()).ui_mode).toBe('hosted_page');
    const hosted = await checkout({ ui_mode: 'hosted_page' });
    expect([hosted.ui_mode, hosted.url]).toEqual(['hosted_page', `${fake.url}/pay/${hosted.id}`]);
    for (const old of ['hosted', 'embedded', 'custom']) {
      expect(await refusal(checkout({ ui_mode: old as Stripe.Checkout.SessionCreateParams.UiMode }))).toEqual({
        status: 400,
        type: 'StripeInvalidRequestError',
        param: 'ui_mode',
      });
    }
  });
});
