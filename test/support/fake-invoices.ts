import type { FakeRoute, RecordedRequest } from './fake-provider';
import { missing, newId, nowSeconds, stripeError, validate } from './fake-provider';

/**
 * The strict double's one-off invoices, as the provider makes them (spec §16.4's automatic top-ups use them):
 *
 *   POST /v1/invoices                 a draft for `customer` (required, known): `metadata`, `auto_advance`,
 *                                     `collection_method`; `pending_invoice_items_behavior` `include` takes the
 *                                     customer's pending items, `exclude` (the default) none
 *   POST /v1/invoiceitems             an item for `customer` (required, known) at `pricing[price]` (a known one-time
 *                                     price: the pinned API version has no `price` parameter) × `quantity`, on the
 *                                     draft `invoice` of the same customer, else pending (taken by the customer's next
 *                                     invoice that includes pending items)
 *   POST /v1/invoices/:id/finalize    draft → open (`invoice.finalized`); any other status → 400
 *   POST /v1/invoices/:id/pay         open → paid with `payment_method`, else the customer's
 *                                     `invoice_settings.default_payment_method` (`invoice.paid`, then
 *                                     `invoice.payment_succeeded`); a declining customer (`declineCards`) → 402
 *                                     card_error card_declined, the invoice stays open (`invoice.payment_failed`);
 *                                     no payment method → 400; paid already → 400 invoice_already_paid
 *   GET  /v1/invoices/:id
 *
 * The amounts are the provider's: a line is the price's `unit_amount` × quantity; `amount_due` their sum.
 */
export interface InvoiceState {
  customers: Map<string, Record<string, any>>;
  prices: Map<string, Record<string, any>>;
  invoices: Map<string, Record<string, any>>;
  /** Invoice items not on an invoice yet, by customer. */
  pendingItems: Map<string, Record<string, any>[]>;
  declining: Set<string>;
  fixture(name: string): Record<string, any>;
  emit(type: string, object: Record<string, any>): void;
}

type Answer = [number, unknown];
const invalid = (message: string, param?: string, code?: string): Answer => [400, stripeError({ type: 'invalid_request_error', message, param, code })];

export function invoiceRoutes(state: InvoiceState): FakeRoute {
  return (req) => {
    if (req.method === 'POST' && req.path === '/v1/invoices') return createInvoice(state, req);
    if (req.method === 'POST' && req.path === '/v1/invoiceitems') return createItem(state, req);
    const one = /^\/v1\/invoices\/([^/]+)(\/finalize|\/pay)?$/.exec(req.path);
    if (!one || one[1] === 'create_preview') return undefined;
    const id = decodeURIComponent(one[1]);
    if (req.method === 'GET' && !one[2]) {
      const found = state.invoices.get(id);
      return validate('GET /v1/invoices/{invoice}', req.query, { invoice: id }) ?? (found ? [200, found] : [404, missing('invoice', id, 'invoice')]);
    }
    if (req.method !== 'POST' || !one[2]) return undefined;
    return one[2] === '/finalize' ? finalize(state, req, id) : pay(state, req, id);
  };
}

function createInvoice(state: InvoiceState, req: RecordedRequest): Answer {
  const problem = validate('POST /v1/invoices', req.body);
  if (problem) return problem;
  const b = req.body as Record<string, any>;
  if (b.customer === undefined) return invalid('Missing required param: customer.', 'customer', 'parameter_missing');
  if (!state.customers.has(b.customer)) return [400, missing('customer', b.customer, 'customer')];
  const id = newId('in_');
  const now = nowSeconds();
  const invoice: Record<string, any> = {
    ...state.fixture('invoice'),
    id,
    customer: b.customer,
    created: now,
    livemode: false,
    status: 'draft',
    metadata: b.metadata ?? {},
    auto_advance: b.auto_advance === 'true',
    collection_method: b.collection_method ?? 'charge_automatically',
    billing_reason: 'manual',
    currency: 'usd',
    amount_due: 0,
    amount_paid: 0,
    amount_remaining: 0,
    amount_overpaid: 0,
    subtotal: 0,
    total: 0,
    attempt_count: 0,
    attempted: false,
    parent: null,
    subscription: undefined,
    hosted_invoice_url: null,
    number: null,
    status_transitions: { finalized_at: null, marked_uncollectible_at: null, paid_at: null, voided_at: null },
    period_start: now,
    period_end: now,
    lines: { object: 'list', data: [], has_more: false, url: `/v1/invoices/${id}/lines` },
  };
  delete invoice.subscription;
  if (b.pending_invoice_items_behavior === 'include') {
    for (const item of state.pendingItems.get(b.customer) ?? []) addLine(invoice, item);
    state.pendingItems.delete(b.customer);
  }
  state.invoices.set(id, invoice);
  return [200, invoice];
}

function createItem(state: InvoiceState, req: RecordedRequest): Answer {
  const problem = validate('POST /v1/invoiceitems', req.body);
  if (problem) return problem;
  const b = req.body as Record<string, any>;
  if (b.customer === undefined) return invalid('Missing required param: customer.', 'customer', 'parameter_missing');
  if (!state.customers.has(b.customer)) return [400, missing('customer', b.customer, 'customer')];
  const priceId: string | undefined = b.pricing?.price;
  if (priceId === undefined) {
    if (b.price_data !== undefined || b.amount !== undefined) return invalid('The test double implements invoice items at a price only (pricing[price])', 'pricing');
    return invalid('Missing required param: pricing[price].', 'pricing[price]', 'parameter_missing');
  }
  const price = state.prices.get(priceId);
  if (!price) return [400, missing('price', priceId, 'pricing[price]')];
  if (price.recurring) return invalid('The price specified is set to `type=recurring` but this field only accepts prices with `type=one_time`.', 'pricing[price]');
  const quantity = b.quantity === undefined ? 1 : Number(b.quantity);
  let invoice: Record<string, any> | undefined;
  if (b.invoice !== undefined) {
    invoice = state.invoices.get(b.invoice);
    if (!invoice) return [400, missing('invoice', b.invoice, 'invoice')];
    if (invoice.customer !== b.customer) return invalid(`The invoice ${b.invoice} belongs to another customer.`, 'invoice');
    if (invoice.status !== 'draft') return invalid('You can only add invoice items to draft invoices.', 'invoice');
  }
  const now = nowSeconds();
  const item: Record<string, any> = {
    id: newId('ii_'),
    object: 'invoiceitem',
    amount: (price.unit_amount ?? 0) * quantity,
    currency: price.currency ?? 'usd',
    customer: b.customer,
    date: now,
    description: b.description ?? price.nickname ?? null,
    discountable: true,
    invoice: invoice?.id ?? null,
    livemode: false,
    metadata: b.metadata ?? {},
    period: { start: now, end: now },
    pricing: { type: 'price_details', price_details: { price: price.id, product: price.product ?? null }, unit_amount_decimal: String(price.unit_amount ?? 0) },
    proration: false,
    quantity,
  };
  if (invoice) addLine(invoice, item);
  else state.pendingItems.set(b.customer, [...(state.pendingItems.get(b.customer) ?? []), item]);
  return [200, item];
}

function addLine(invoice: Record<string, any>, item: Record<string, any>): void {
  item.invoice = invoice.id;
  invoice.lines.data.push({
    id: newId('il_'),
    object: 'line_item',
    amount: item.amount,
    currency: item.currency,
    description: item.description,
    invoice: invoice.id,
    livemode: false,
    metadata: item.metadata,
    parent: { type: 'invoice_item_details', invoice_item_details: { invoice_item: item.id, proration: false, proration_details: null, subscription: null }, subscription_item_details: null },
    period: item.period,
    pricing: item.pricing,
    quantity: item.quantity,
    subtotal: item.amount,
  });
  const total = invoice.lines.data.reduce((sum: number, line: Record<string, any>) => sum + line.amount, 0);
  Object.assign(invoice, { currency: item.currency, subtotal: total, total, amount_due: total, amount_remaining: total });
}

function finalize(state: InvoiceState, req: RecordedRequest, id: string): Answer {
  const problem = validate('POST /v1/invoices/{invoice}/finalize', req.body, { invoice: id });
  if (problem) return problem;
  const invoice = state.invoices.get(id);
  if (!invoice) return [404, missing('invoice', id, 'invoice')];
  if (invoice.status !== 'draft') return invalid('This invoice is already finalized, you can\'t re-finalize a non-draft invoice.', undefined, 'invoice_not_editable');
  const now = nowSeconds();
  Object.assign(invoice, {
    status: 'open',
    number: `FAKE-${String(state.invoices.size).padStart(4, '0')}`,
    hosted_invoice_url: `https://invoice.stripe.com/i/${id}`,
    effective_at: now,
    status_transitions: { ...invoice.status_transitions, finalized_at: now },
  });
  if (req.body.auto_advance !== undefined) invoice.auto_advance = req.body.auto_advance === 'true';
  state.emit('invoice.finalized', invoice);
  return [200, invoice];
}

function pay(state: InvoiceState, req: RecordedRequest, id: string): Answer {
  const problem = validate('POST /v1/invoices/{invoice}/pay', req.body, { invoice: id });
  if (problem) return problem;
  const invoice = state.invoices.get(id);
  if (!invoice) return [404, missing('invoice', id, 'invoice')];
  if (invoice.status === 'paid') return invalid('Invoice is already paid', undefined, 'invoice_already_paid');
  if (invoice.status !== 'open') return invalid(`You can only pay an open invoice; this one is ${invoice.status}.`, undefined, 'invoice_not_open');
  const customer = state.customers.get(invoice.customer)!;
  const paymentMethod = (req.body.payment_method as string | undefined) ?? customer.invoice_settings?.default_payment_method ?? null;
  if (!paymentMethod) {
    return invalid('This customer has no attached payment source or default payment method. Please consider adding a default payment method.');
  }
  const now = nowSeconds();
  invoice.attempt_count += 1;
  invoice.attempted = true;
  if (state.declining.has(invoice.customer)) {
    state.emit('invoice.payment_failed', invoice);
    return [402, stripeError({ type: 'card_error', code: 'card_declined', message: 'Your card was declined.' })];
  }
  Object.assign(invoice, {
    status: 'paid',
    amount_paid: invoice.amount_due,
    amount_remaining: 0,
    status_transitions: { ...invoice.status_transitions, paid_at: now },
  });
  state.emit('invoice.paid', invoice);
  state.emit('invoice.payment_succeeded', invoice);
  return [200, invoice];
}
