import { z, ZodType } from 'zod';

/**
 * The provider's objects as this service reads them: the JSON types of the fields it reads, as the provider
 * sends them (its API reference; both today's and older field locations), whether in an event's `data.object`
 * or in an answer of its API. Types only: whether a field must be present, and what its value means, is the
 * reader's rule. A signed event whose field has another type (`status: ["active"]`, `amount_paid: "100"`) is
 * stored `failed` (`invalid_event`) and changes nothing: read as absent, it would apply something the provider
 * never said (spec §6). Other fields are kept as they are, unread.
 */

/** An id, or the expanded object carrying it. */
const id = z.union([z.string(), z.looseObject({ id: z.string() })], { error: 'expected an id: a string, or an object with a string id' });
/** Unix seconds. */
const seconds = z.int();
/** The provider's metadata: string keys and string values. */
const metadata = z.record(z.string(), z.string());
const price = z.looseObject({
  id: z.string().optional(),
  metadata: metadata.nullish(),
  lookup_key: z.string().nullish(),
  recurring: z.looseObject({ interval: z.string().optional() }).nullish(),
});

export const subscriptionSchema = z.looseObject({
  id: z.string().optional(),
  customer: id.nullish(),
  status: z.string().optional(),
  metadata: metadata.nullish(),
  current_period_start: seconds.nullish(),
  current_period_end: seconds.nullish(),
  cancel_at_period_end: z.boolean().nullish(),
  trial_end: seconds.nullish(),
  schedule: id.nullish(),
  default_payment_method: id.nullish(),
  items: z
    .looseObject({
      data: z.array(
        z.looseObject({
          price: price.nullish(),
          quantity: z.int().min(0).nullish(),
          current_period_start: seconds.nullish(),
          current_period_end: seconds.nullish(),
        }),
      ),
    })
    .nullish(),
});

const schedulePhase = z.looseObject({
  start_date: seconds.nullish(),
  end_date: seconds.nullish(),
  metadata: metadata.nullish(),
  items: z.array(z.looseObject({ price: z.union([z.string(), price]).nullish(), quantity: z.int().min(0).nullish() })).nullish(),
});

export const scheduleSchema = z.looseObject({
  id: z.string().optional(),
  customer: id.nullish(),
  subscription: id.nullish(),
  released_subscription: id.nullish(),
  status: z.string().optional(),
  metadata: metadata.nullish(),
  current_phase: z.looseObject({ start_date: seconds.nullish(), end_date: seconds.nullish() }).nullish(),
  phases: z.array(schedulePhase).nullish(),
});

const invoiceLine = z.looseObject({
  price: id.nullish(),
  plan: id.nullish(),
  pricing: z.looseObject({ price_details: z.looseObject({ price: id.nullish() }).nullish() }).nullish(),
  parent: z.looseObject({ subscription_item_details: z.looseObject({ subscription: id.nullish() }).nullish() }).nullish(),
  subscription: id.nullish(),
  period: z.looseObject({ start: seconds.nullish(), end: seconds.nullish() }).nullish(),
});

export const invoiceSchema = z.looseObject({
  id: z.string().optional(),
  customer: id.nullish(),
  subscription: id.nullish(),
  amount_paid: z.number().optional(),
  currency: z.string().optional(),
  hosted_invoice_url: z.string().nullish(),
  created: seconds.nullish(),
  period_start: seconds.nullish(),
  period_end: seconds.nullish(),
  status_transitions: z.looseObject({ paid_at: seconds.nullish() }).nullish(),
  metadata: metadata.nullish(),
  subscription_details: z.looseObject({ metadata: metadata.nullish() }).nullish(),
  parent: z
    .looseObject({ subscription_details: z.looseObject({ subscription: id.nullish(), metadata: metadata.nullish() }).nullish() })
    .nullish(),
  lines: z.looseObject({ data: z.array(invoiceLine) }).nullish(),
});

export const customerSchema = z.looseObject({ id: z.string().optional() });

/** A checkout session (`checkout.session.*` events): what a paid credit pack's grant is made from (spec §16.3). */
export const checkoutSessionSchema = z.looseObject({
  id: z.string().optional(),
  customer: id.nullish(),
  mode: z.string().nullish(),
  status: z.string().nullish(),
  payment_status: z.string().nullish(),
  client_reference_id: z.string().nullish(),
  metadata: metadata.nullish(),
});

export type SubscriptionObject = z.output<typeof subscriptionSchema>;
export type ScheduleObject = z.output<typeof scheduleSchema>;
export type InvoiceObject = z.output<typeof invoiceSchema>;
export type CustomerObject = z.output<typeof customerSchema>;
export type CheckoutSessionObject = z.output<typeof checkoutSessionSchema>;

/** Why `object` does not fit `schema` (the first few fields, named by their path), or undefined. */
export function wrongTypes(schema: ZodType, object: unknown): string | undefined {
  const result = schema.safeParse(object);
  if (result.success) return undefined;
  return result.error.issues
    .slice(0, 3)
    .map((issue) => `data.object.${issue.path.join('.')}: ${issue.message}`)
    .join('; ');
}
