import type { FakeRoute, RecordedRequest } from './fake-provider';
import { missing, newId, nowSeconds, stripeError, unsupported, validate } from './fake-provider';
import { invoiceObject } from './provider-events';
import { formatDate } from '../../src/common/display-format';

/**
 * The strict double's subscription changes, as the provider makes them (spec §11.4 uses them):
 *
 *   POST /v1/subscriptions/:id                 items (id, price, quantity), proration_behavior, payment_behavior,
 *                                              proration_date, cancel_at_period_end
 *   POST /v1/invoices/create_preview           subscription, subscription_details[items|proration_behavior|proration_date]
 *   POST /v1/subscription_schedules            from_subscription (alone, as the provider requires)
 *   GET  /v1/subscription_schedules/:id
 *   POST /v1/subscription_schedules/:id        phases (items, start_date, end_date), end_behavior, proration_behavior
 *   POST /v1/subscription_schedules/:id/release
 *
 * Being the provider here, it computes the money: an item's amount is `unit_amount × quantity`; a change at
 * `proration_date` (default now) credits the unused part of the period and charges the remaining part at the
 * new price, by the second; a change of interval starts a new period then (credit, then the new price in
 * full). `always_invoice` invoices that at once (paid, unless the customer's card declines: see
 * `declineCards`); `create_prorations` previews it with the next period's charge; `none` previews the next
 * period's invoice at the new price. Its errors: an unknown subscription (404) or price, item or schedule
 * (400 resource_missing naming the param); a card declined with `pending_if_incomplete` → 200, the items
 * unchanged and a `pending_update` (any other payment_behavior → 402 card_declined); a customer whose address
 * gives no tax location on a subscription with automatic tax → 400 customer_tax_location_invalid; a
 * cancellation setting on a subscription a schedule manages; `from_subscription` with other parameters or
 * for a subscription already on a schedule; phases that move the current phase's start; a released schedule.
 * Each change queues the events the provider sends for it (see FakeProvider.deliverEvents).
 */

export interface ChangeState {
  subscriptions: Map<string, Record<string, any>>;
  prices: Map<string, Record<string, any>>;
  schedules: Map<string, Record<string, any>>;
  /** Customers whose card declines every payment. */
  declining: Set<string>;
  /** Customers whose address gives no tax location. */
  noTaxLocation: Set<string>;
  /** Queues an event as the provider would send it. */
  emit(type: string, object: Record<string, any>, previousAttributes?: Record<string, unknown>): void;
}

type Answer = [number, unknown];
const invalid = (message: string, param?: string, code?: string): Answer => [400, stripeError({ type: 'invalid_request_error', message, param, code })];

// Like the provider (and the sandbox): a proration date lies within the item's current period.
const PRORATION_DATE_OUTSIDE = 'proration_date must be within the current period of the subscription.';
const withinPeriod = (at: number, item: Record<string, any>) => at >= item.current_period_start && at <= item.current_period_end;

export function subscriptionChangeRoutes(state: ChangeState): FakeRoute {
  return (req) => {
    const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(req.path);
    if (req.method === 'POST' && subscription) return updateSubscription(state, req, decodeURIComponent(subscription[1]));
    if (req.method === 'POST' && req.path === '/v1/invoices/create_preview') return preview(state, req);
    if (req.method === 'POST' && req.path === '/v1/subscription_schedules') return createSchedule(state, req);
    const schedule = /^\/v1\/subscription_schedules\/([^/]+)(\/release)?$/.exec(req.path);
    if (!schedule) return undefined;
    const id = decodeURIComponent(schedule[1]);
    if (req.method === 'GET' && !schedule[2]) {
      const found = state.schedules.get(id);
      return validate('GET /v1/subscription_schedules/{schedule}', req.query, { schedule: id }) ?? (found ? [200, found] : [404, missing('subscription_schedule', id, 'schedule')]);
    }
    if (req.method !== 'POST') return undefined;
    return schedule[2] ? releaseSchedule(state, req, id) : updateSchedule(state, req, id);
  };
}

// --- the money, as the provider computes it ---

interface ItemPlan {
  price: Record<string, any>;
  quantity: number;
}
interface Line {
  description: string;
  amount: number;
  period: { start: number; end: number };
  proration: boolean;
}

function addInterval(at: number, price: Record<string, any>): number {
  const d = new Date(at * 1000);
  const n = price.recurring?.interval_count ?? 1;
  const interval = price.recurring?.interval ?? 'month';
  if (interval === 'year') d.setUTCFullYear(d.getUTCFullYear() + n);
  else if (interval === 'month') d.setUTCMonth(d.getUTCMonth() + n);
  else d.setUTCDate(d.getUTCDate() + n * (interval === 'week' ? 7 : 1));
  return Math.floor(d.getTime() / 1000);
}

const totalOf = (p: ItemPlan) => (p.price.unit_amount ?? 0) * p.quantity;
const nameOf = (p: ItemPlan) => `${p.quantity} × ${p.price.nickname ?? p.price.id}`;
// The provider writes the date of a proration line as `27 Aug 2015`.
const day = (at: number) => formatDate(at);

function fullPeriod(p: ItemPlan, start: number): Line {
  const at = `${(p.price.unit_amount ?? 0) / 100} ${p.price.currency} / ${p.price.recurring?.interval}`;
  return { description: `${nameOf(p)} (at ${at})`, amount: totalOf(p), period: { start, end: addInterval(start, p.price) }, proration: false };
}

/**
 * The lines of a change from `before` to `after` at `at`, in a period [start, end): the unused time credited,
 * the remaining time charged (by the second); a new interval starts a new period at `at`.
 */
function prorations(before: ItemPlan, after: ItemPlan, at: number, start: number, end: number): { lines: Line[]; newPeriod?: number } {
  const left = Math.max(0, Math.min(1, (end - at) / (end - start)));
  const credit: Line = { description: `Unused time on ${nameOf(before)} after ${day(at)}`, amount: -Math.round(totalOf(before) * left), period: { start: at, end }, proration: true };
  if (before.price.recurring?.interval !== after.price.recurring?.interval) return { lines: [credit, fullPeriod(after, at)], newPeriod: at };
  const charge: Line = { description: `Remaining time on ${nameOf(after)} after ${day(at)}`, amount: Math.round(totalOf(after) * left), period: { start: at, end }, proration: true };
  return { lines: [credit, charge] };
}

// --- subscriptions ---

/** The subscription's one item and what an `items` parameter makes of it, or the provider's 400. */
function itemChange(state: ChangeState, sub: Record<string, any>, items: Record<string, any>[], param: string): { item: Record<string, any>; after: ItemPlan } | Answer {
  if (items.length !== 1) return invalid('The test double implements changes of one item at a time', param);
  const [change] = items;
  if (change.id === undefined) return invalid('The test double does not implement adding items', `${param}[0][id]`);
  const item = (sub.items?.data ?? []).find((i: Record<string, any>) => i.id === change.id);
  if (!item) return invalid(`Invalid subscription_item id: ${change.id}`, `${param}[0][id]`, 'resource_missing');
  const price = change.price === undefined ? item.price : state.prices.get(change.price);
  if (!price) return [400, missing('price', change.price, `${param}[0][price]`)];
  if (!price.active) return invalid(`The price specified is inactive. This field only accepts active prices.`, `${param}[0][price]`);
  const quantity = change.quantity === undefined ? item.quantity : Number(change.quantity);
  if (quantity < 0) return invalid('Invalid integer: must be at least 0', `${param}[0][quantity]`);
  return { item, after: { price, quantity } };
}

function taxProblem(state: ChangeState, sub: Record<string, any>): Answer | undefined {
  if (sub.automatic_tax?.enabled !== true || !state.noTaxLocation.has(sub.customer)) return undefined;
  const message = "The customer's location isn't recognized. Add a valid address to the customer to calculate tax automatically.";
  return invalid(message, undefined, 'customer_tax_location_invalid');
}

function updateSubscription(state: ChangeState, req: RecordedRequest, id: string): Answer {
  const params = req.body as Record<string, any>;
  const problem =
    validate('POST /v1/subscriptions/{subscription_exposed_id}', params, { subscription_exposed_id: id }) ??
    unsupported(params, ['items', 'proration_behavior', 'payment_behavior', 'proration_date', 'cancel_at_period_end']);
  if (problem) return problem;
  const sub = state.subscriptions.get(id);
  if (!sub) return [404, missing('subscription', id, 'id')];
  if (sub.status === 'canceled') return invalid('A canceled subscription can only update its cancellation_details and metadata.');
  if (params.payment_behavior === 'pending_if_incomplete' && params.cancel_at_period_end !== undefined) {
    return invalid('When `payment_behavior` is `pending_if_incomplete`, you can only pass the parameters supported by pending updates.', 'cancel_at_period_end');
  }
  if (params.cancel_at_period_end !== undefined) {
    if (sub.schedule) {
      return invalid(
        `The subscription is managed by the subscription schedule \`${sub.schedule}\`, and updating any cancelation behavior directly is not allowed. Please update the schedule instead.`,
      );
    }
    const cancel = params.cancel_at_period_end === 'true';
    const previous = { cancel_at_period_end: sub.cancel_at_period_end, cancel_at: sub.cancel_at, canceled_at: sub.canceled_at };
    const item = sub.items.data[0];
    Object.assign(sub, { cancel_at_period_end: cancel, cancel_at: cancel ? item.current_period_end : null, canceled_at: cancel ? nowSeconds() : null });
    state.emit('customer.subscription.updated', sub, previous);
  }
  if (params.items !== undefined) {
    const answer = changeItems(state, sub, params);
    if (answer) return answer;
  }
  return [200, sub];
}

/** Applies an `items` change (prorated and invoiced as asked); answers only an error. */
function changeItems(state: ChangeState, sub: Record<string, any>, params: Record<string, any>): Answer | undefined {
  const change = itemChange(state, sub, params.items, 'items');
  if (Array.isArray(change)) return change;
  const tax = taxProblem(state, sub);
  if (tax) return tax;
  const { item, after } = change;
  const at = params.proration_date === undefined ? nowSeconds() : Number(params.proration_date);
  if (!withinPeriod(at, item)) return invalid(PRORATION_DATE_OUTSIDE, 'proration_date');
  const behavior = params.proration_behavior ?? 'create_prorations';
  const { lines, newPeriod } = prorations({ price: item.price, quantity: item.quantity }, after, at, item.current_period_start, item.current_period_end);
  const amountDue = Math.max(0, lines.reduce((sum, l) => sum + l.amount, 0));
  const invoiced = behavior === 'always_invoice' || newPeriod !== undefined;
  const invoice = invoiced ? invoiceOf(sub, lines, amountDue, at) : undefined;
  if (invoice && amountDue > 0 && state.declining.has(sub.customer)) {
    if (params.payment_behavior !== 'pending_if_incomplete') {
      return [402, stripeError({ type: 'card_error', code: 'card_declined', message: 'Your card was declined.' })];
    }
    Object.assign(invoice, { status: 'open', amount_paid: 0, amount_remaining: amountDue });
    invoice.status_transitions.paid_at = null;
    const previous = { pending_update: sub.pending_update ?? null, latest_invoice: sub.latest_invoice };
    sub.pending_update = {
      billing_cycle_anchor: null,
      expires_at: nowSeconds() + 23 * 3600,
      subscription_items: [{ ...item, price: after.price, quantity: after.quantity }],
      trial_end: null,
      trial_from_plan: null,
    };
    sub.latest_invoice = invoice.id;
    state.emit('invoice.payment_failed', invoice);
    state.emit('customer.subscription.updated', sub, previous);
    return undefined;
  }
  const previous = { items: structuredClone(sub.items), pending_update: sub.pending_update ?? null };
  // The provider's `plan` mirrors the price; this double's subscriptions carry the price only.
  delete item.plan;
  Object.assign(item, { price: after.price, quantity: after.quantity });
  if (newPeriod !== undefined) {
    Object.assign(item, { current_period_start: newPeriod, current_period_end: addInterval(newPeriod, after.price) });
    sub.billing_cycle_anchor = newPeriod;
  }
  sub.pending_update = null;
  if (invoice) sub.latest_invoice = invoice.id;
  state.emit('customer.subscription.updated', sub, previous);
  if (invoice) {
    state.emit('invoice.paid', invoice);
    state.emit('invoice.payment_succeeded', invoice);
  }
  return undefined;
}

function invoiceOf(sub: Record<string, any>, lines: Line[], amountDue: number, at: number): Record<string, any> {
  const invoice = invoiceObject({
    subscription: sub.id,
    customer: sub.customer,
    organisationId: sub.metadata?.organisation_id,
    amountPaid: amountDue,
    currency: sub.currency ?? 'usd',
    created: at,
    paidAt: nowSeconds(),
    price: sub.items.data[0].price.id,
  });
  invoice.billing_reason = 'subscription_update';
  invoice.lines.data = lines.map((l) => lineOf(invoice, sub, l));
  invoice.subtotal = invoice.total = lines.reduce((sum, l) => sum + l.amount, 0);
  return invoice;
}

function lineOf(invoice: Record<string, any>, sub: Record<string, any>, l: Line): Record<string, any> {
  return {
    id: newId('il_'),
    object: 'line_item',
    amount: l.amount,
    currency: invoice.currency,
    description: l.description,
    invoice: invoice.id,
    livemode: false,
    metadata: {},
    period: l.period,
    quantity: 1,
    parent: {
      type: 'subscription_item_details',
      invoice_item_details: null,
      subscription_item_details: { invoice_item: null, proration: l.proration, subscription: sub.id, subscription_item: sub.items.data[0].id },
    },
  };
}

function preview(state: ChangeState, req: RecordedRequest): Answer {
  const params = req.body as Record<string, any>;
  const details = (params.subscription_details ?? {}) as Record<string, any>;
  const problem =
    validate('POST /v1/invoices/create_preview', params) ??
    unsupported(params, ['subscription', 'subscription_details']) ??
    unsupported(details, ['items', 'proration_behavior', 'proration_date']);
  if (problem) return problem;
  if (params.subscription === undefined) return invalid('The test double implements previews of a subscription only', 'subscription');
  const sub = state.subscriptions.get(params.subscription);
  if (!sub) return [400, missing('subscription', params.subscription, 'subscription')];
  const change = details.items === undefined ? undefined : itemChange(state, sub, details.items, 'subscription_details[items]');
  if (Array.isArray(change)) return change;
  const tax = taxProblem(state, sub);
  if (tax) return tax;
  const item = sub.items.data[0];
  const before = { price: item.price, quantity: item.quantity };
  const after = change?.after ?? before;
  const at = details.proration_date === undefined ? nowSeconds() : Number(details.proration_date);
  if (!withinPeriod(at, item)) return invalid(PRORATION_DATE_OUTSIDE, 'subscription_details[proration_date]');
  const behavior = details.proration_behavior ?? 'create_prorations';
  const changed = prorations(before, after, at, item.current_period_start, item.current_period_end);
  const lines =
    behavior === 'none'
      ? [fullPeriod(after, item.current_period_end)]
      : behavior === 'always_invoice' || changed.newPeriod !== undefined
        ? changed.lines
        : [...changed.lines, fullPeriod(after, item.current_period_end)];
  const amountDue = Math.max(0, lines.reduce((sum, l) => sum + l.amount, 0));
  const invoice = invoiceOf(sub, lines, amountDue, at);
  Object.assign(invoice, { id: null, status: 'draft', amount_paid: 0, amount_remaining: amountDue, hosted_invoice_url: null });
  invoice.status_transitions.paid_at = null;
  return [200, invoice];
}

// --- subscription schedules ---

function scheduleOf(sub: Record<string, any>): Record<string, any> {
  const item = sub.items.data[0];
  const now = nowSeconds();
  const start = item.current_period_start;
  return {
    id: newId('sub_sched_'),
    object: 'subscription_schedule',
    application: null,
    canceled_at: null,
    completed_at: null,
    created: now,
    current_phase: { start_date: start, end_date: item.current_period_end },
    customer: sub.customer,
    default_settings: { billing_cycle_anchor: 'automatic', collection_method: 'charge_automatically' },
    end_behavior: 'release',
    livemode: false,
    metadata: {},
    phases: [phaseOf([{ price: item.price.id, quantity: String(item.quantity) }], start, item.current_period_end, sub.currency ?? 'usd')],
    released_at: null,
    released_subscription: null,
    status: 'active',
    subscription: sub.id,
    test_clock: null,
  };
}

function phaseOf(items: { price: string; quantity?: string }[], start: number, end: number, currency: string): Record<string, any> {
  return {
    add_invoice_items: [],
    currency,
    discounts: [],
    end_date: end,
    items: items.map((i) => ({ discounts: [], metadata: {}, price: i.price, quantity: Number(i.quantity ?? 1), tax_rates: [] })),
    metadata: {},
    proration_behavior: 'create_prorations',
    start_date: start,
    trial_end: null,
  };
}

function createSchedule(state: ChangeState, req: RecordedRequest): Answer {
  const params = req.body as Record<string, any>;
  const problem = validate('POST /v1/subscription_schedules', params) ?? unsupported(params, ['from_subscription', 'phases', 'start_date', 'end_behavior', 'customer', 'default_settings']);
  if (problem) return problem;
  if (params.from_subscription === undefined) return invalid('The test double implements schedules from a subscription only', 'from_subscription');
  const other = ['phases', 'start_date', 'end_behavior', 'customer', 'default_settings'].find((p) => params[p] !== undefined);
  if (other) return invalid(`You cannot set \`${other}\` if \`from_subscription\` is set.`, other);
  const sub = state.subscriptions.get(params.from_subscription);
  if (!sub) return [400, missing('subscription', params.from_subscription, 'from_subscription')];
  if (sub.schedule) return invalid(`You cannot migrate a subscription that is already attached to a schedule: \`${sub.schedule}\`.`, 'from_subscription');
  if (sub.status === 'canceled') return invalid('You cannot migrate a canceled subscription to a schedule.', 'from_subscription');
  const schedule = scheduleOf(sub);
  state.schedules.set(schedule.id, schedule);
  sub.schedule = schedule.id;
  state.emit('subscription_schedule.created', schedule);
  state.emit('customer.subscription.updated', sub, { schedule: null });
  return [200, schedule];
}

function updateSchedule(state: ChangeState, req: RecordedRequest, id: string): Answer {
  const params = req.body as Record<string, any>;
  const problem = validate('POST /v1/subscription_schedules/{schedule}', params, { schedule: id }) ?? unsupported(params, ['phases', 'end_behavior', 'proration_behavior']);
  if (problem) return problem;
  const schedule = state.schedules.get(id);
  if (!schedule) return [404, missing('subscription_schedule', id, 'schedule')];
  if (!['active', 'not_started'].includes(schedule.status)) {
    return invalid(`You cannot update a subscription schedule that is currently in the \`${schedule.status}\` status.`);
  }
  if (params.phases !== undefined) {
    const phases = params.phases as Record<string, any>[];
    if (!phases.length) return invalid('Missing required param: phases.', 'phases', 'parameter_missing');
    if (Number(phases[0].start_date) !== schedule.current_phase.start_date) {
      return invalid('You can not modify the start date of the current phase.', 'phases[0][start_date]');
    }
    const built: Record<string, any>[] = [];
    for (const [i, phase] of phases.entries()) {
      const items = (phase.items ?? []) as { price: string; quantity?: string }[];
      if (!items.length) return invalid('Missing required param: items.', `phases[${i}][items]`, 'parameter_missing');
      const unknown = items.findIndex((it) => !state.prices.has(it.price));
      if (unknown >= 0) return [400, missing('price', items[unknown].price, `phases[${i}][items][${unknown}][price]`)];
      const start = i === 0 ? Number(phase.start_date) : built[i - 1].end_date;
      const end = phase.end_date !== undefined ? Number(phase.end_date) : addInterval(start, state.prices.get(items[0].price)!);
      if (end <= start) return invalid('The phase end_date must be after its start_date.', `phases[${i}][end_date]`);
      built.push(phaseOf(items, start, end, schedule.phases[0].currency));
    }
    schedule.phases = built;
  }
  if (params.end_behavior !== undefined) schedule.end_behavior = params.end_behavior;
  state.emit('subscription_schedule.updated', schedule);
  return [200, schedule];
}

function releaseSchedule(state: ChangeState, req: RecordedRequest, id: string): Answer {
  const problem = validate('POST /v1/subscription_schedules/{schedule}/release', req.body, { schedule: id }) ?? unsupported(req.body, []);
  if (problem) return problem;
  const schedule = state.schedules.get(id);
  if (!schedule) return [404, missing('subscription_schedule', id, 'schedule')];
  if (!['active', 'not_started'].includes(schedule.status)) {
    return invalid(`You cannot release a subscription schedule that is currently in the \`${schedule.status}\` status.`);
  }
  const sub = state.subscriptions.get(schedule.subscription);
  Object.assign(schedule, { status: 'released', released_at: nowSeconds(), released_subscription: schedule.subscription, subscription: null });
  state.emit('subscription_schedule.released', schedule);
  if (sub) {
    sub.schedule = null;
    state.emit('customer.subscription.updated', sub, { schedule: id });
  }
  return [200, schedule];
}
