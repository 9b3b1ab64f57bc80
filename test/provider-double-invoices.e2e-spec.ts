import Stripe from 'stripe';
import { FAKE_SECRET_KEY, FakeProvider, startFakeProvider } from './support/fake-provider';

/**
 * The strict double's one-off invoices through the real SDK (spec §16.4's automatic top-ups use them), as the
 * provider's API description of the pinned version and its rules have them: invoice items at `pricing[price]` (no
 * `price` parameter), a draft made open by finalize and paid with the customer's default payment method, a declined
 * card, the states each step needs, the amounts from the price, the events, and idempotency keys.
 */
describe('the provider double makes, finalizes and pays invoices like the provider', () => {
  let fake: FakeProvider;
  let stripe: Stripe;
  beforeAll(async () => {
    fake = await startFakeProvider();
    const url = new URL(fake.url);
    stripe = new Stripe(FAKE_SECRET_KEY, { host: url.hostname, port: url.port, protocol: 'http', maxNetworkRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.reset();
    fake.addPrice('price_pack', { recurring: null, type: 'one_time', currency: 'eur', unit_amount: 700 });
  });

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: Stripe.errors.StripeError) => ({ status: err.statusCode, type: err.type, code: err.code, param: err.param }),
    );
  const cardCustomer = () => fake.addCustomer(undefined, { invoice_settings: { default_payment_method: 'pm_card_visa' } });

  it('draft → item on it → finalize (open) → pay (paid): amounts from the price, the events the provider sends', async () => {
    const customer = cardCustomer();
    const draft = await stripe.invoices.create({ customer, auto_advance: false, pending_invoice_items_behavior: 'exclude', metadata: { purpose: 'auto_recharge' } });
    expect(draft).toMatchObject({ object: 'invoice', status: 'draft', customer, amount_due: 0, auto_advance: false, metadata: { purpose: 'auto_recharge' } });
    const item = await stripe.invoiceItems.create({ customer, invoice: draft.id, pricing: { price: 'price_pack' }, quantity: 2 });
    expect(item).toMatchObject({ object: 'invoiceitem', amount: 1400, invoice: draft.id });
    const open = await stripe.invoices.finalizeInvoice(draft.id!);
    expect(open).toMatchObject({ status: 'open', amount_due: 1400, currency: 'eur' });
    const paid = await stripe.invoices.pay(draft.id!, { off_session: true });
    expect(paid).toMatchObject({ status: 'paid', amount_paid: 1400, amount_remaining: 0 });
    expect((await stripe.invoices.retrieve(draft.id!)).status).toBe('paid');
    expect(fake.queuedEvents.map((e) => e.type)).toEqual(['invoice.finalized', 'invoice.paid', 'invoice.payment_succeeded']);
  });

  it("refuses what the provider refuses: `price` (not a parameter of the pinned version), unknown customer or price, another customer's invoice, the wrong states", async () => {
    const customer = cardCustomer();
    const other = cardCustomer();
    const draft = await stripe.invoices.create({ customer });
    const legacy = stripe.invoiceItems.create({ customer, invoice: draft.id, price: 'price_pack' } as unknown as Stripe.InvoiceItemCreateParams);
    expect(await refusal(legacy)).toMatchObject({ status: 400, code: 'parameter_unknown', param: 'price' });
    expect(await refusal(stripe.invoiceItems.create({ customer, pricing: { price: 'price_nope' } }))).toMatchObject({ status: 400, code: 'resource_missing', param: 'pricing[price]' });
    expect(await refusal(stripe.invoices.create({ customer: 'cus_nope' }))).toMatchObject({ status: 400, code: 'resource_missing', param: 'customer' });
    expect(await refusal(stripe.invoiceItems.create({ customer: other, invoice: draft.id, pricing: { price: 'price_pack' } }))).toMatchObject({ status: 400, param: 'invoice' });
    expect(await refusal(stripe.invoices.create({ customer, pending_invoice_items_behavior: 'sometimes' as 'include' }))).toMatchObject({ status: 400, param: 'pending_invoice_items_behavior' });
    expect(await refusal(stripe.invoices.pay(draft.id!))).toMatchObject({ status: 400 });
    await stripe.invoices.finalizeInvoice(draft.id!);
    expect(await refusal(stripe.invoices.finalizeInvoice(draft.id!))).toMatchObject({ status: 400 });
    expect(await refusal(stripe.invoiceItems.create({ customer, invoice: draft.id, pricing: { price: 'price_pack' } }))).toMatchObject({ status: 400, param: 'invoice' });
    await stripe.invoices.pay(draft.id!);
    expect(await refusal(stripe.invoices.pay(draft.id!))).toMatchObject({ status: 400, code: 'invoice_already_paid' });
    expect(await refusal(stripe.invoices.retrieve('in_nope'))).toMatchObject({ status: 404 });
  });

  it('a pending item joins the next invoice that includes pending items; without a payment method it is not paid', async () => {
    const customer = fake.addCustomer();
    await stripe.invoiceItems.create({ customer, pricing: { price: 'price_pack' } });
    const swept = await stripe.invoices.create({ customer, pending_invoice_items_behavior: 'include' });
    expect(swept.amount_due).toBe(700);
    await stripe.invoices.finalizeInvoice(swept.id!);
    expect(await refusal(stripe.invoices.pay(swept.id!))).toMatchObject({ status: 400 });
  });

  it('a declined card: 402 card_declined, the invoice stays open, invoice.payment_failed; the same key answers the same', async () => {
    const customer = cardCustomer();
    fake.declineCards(customer);
    const invoice = await stripe.invoices.create({ customer }, { idempotencyKey: 'k_invoice' });
    expect((await stripe.invoices.create({ customer }, { idempotencyKey: 'k_invoice' })).id).toBe(invoice.id);
    await stripe.invoiceItems.create({ customer, invoice: invoice.id, pricing: { price: 'price_pack' } });
    await stripe.invoices.finalizeInvoice(invoice.id!);
    expect(await refusal(stripe.invoices.pay(invoice.id!, {}, { idempotencyKey: 'k_pay' }))).toEqual({ status: 402, type: 'StripeCardError', code: 'card_declined', param: undefined });
    expect(await refusal(stripe.invoices.pay(invoice.id!, {}, { idempotencyKey: 'k_pay' }))).toMatchObject({ status: 402, code: 'card_declined' });
    expect(fake.invoices.get(invoice.id!)).toMatchObject({ status: 'open', attempt_count: 1 });
    expect(fake.queuedEvents.map((e) => e.type)).toEqual(['invoice.finalized', 'invoice.payment_failed']);
  });
});
