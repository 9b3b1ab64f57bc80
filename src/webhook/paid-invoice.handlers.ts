import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { rechargePurchaseOf, RECHARGE_PURPOSE } from '../billing/credit-purchases';
import { CreditTopUpsService } from '../billing/credit-top-ups.service';
import { HistoryService, PaidInvoice } from '../billing/history.service';
import { EVENT_TYPES, idOf, ProviderEvent, secondsOf } from '../provider/provider-event';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { AppConfig } from '../config/app-config';
import { EventHandler, failed, HandlerOutcome, HandlesEvent, reasons } from './event-handler';
import { InvoiceObject, invoiceSchema } from '../provider/provider-objects';
import { OrganisationLinks } from './organisation-links';

/**
 * A paid invoice: one billing-history entry per invoice id, whichever of its events arrives (both
 * `invoice.payment_succeeded` and `invoice.paid`, which also covers invoices paid out of band). Changes no
 * tier. An invoice often arrives before its subscription: when its organisation is not known yet it waits
 * (unmatched) if its lines carry a price of this service or its subscription is known; else it is another
 * product's (ignored).
 */
@Injectable()
abstract class PaidInvoiceHandler implements EventHandler<typeof invoiceSchema> {
  readonly schema = invoiceSchema;

  constructor(
    private readonly config: AppConfig,
    private readonly links: OrganisationLinks,
    private readonly subscriptions: SubscriptionsService,
    private readonly history: HistoryService,
    private readonly topUps: CreditTopUpsService,
  ) {}

  providerIds(event: ProviderEvent<InvoiceObject>): (string | undefined)[] {
    const invoice = event.data.object;
    return [idOf(invoice.customer), subscriptionOf(invoice, linesOf(invoice))];
  }

  async handle(manager: EntityManager, event: ProviderEvent<InvoiceObject>): Promise<HandlerOutcome> {
    const invoice = readInvoice(event, this.config);
    if ('failure' in invoice) return invoice.failure;
    const { ids, lines, entry } = invoice;
    const known = ids.subscriptionId ? await this.subscriptions.find(manager, ids.subscriptionId) : undefined;
    const match = await this.links.resolve(manager, invoice.metadataIds, ids.customerId, known);
    if (match.conflict) return failed('organisation_conflict', match.conflict, ids);
    const organisationId = match.organisationId;
    if (!organisationId) {
      const ours = lines.some((line) => this.subscriptions.tierOfPrice(priceOf(line)));
      if (!ours) return { ...ids, status: 'ignored', reason: 'not an invoice of this service: no organisation and no price of ours' };
      return { ...ids, status: 'unmatched', reason: match.note ?? 'no organisation is linked to this customer or subscription yet' };
    }
    const recorded = await this.history.record(manager, { organisationId, ...entry });
    const topUp = await this.grantRecharge(manager, event.data.object, entry.invoiceId);
    if (topUp && 'failure' in topUp) return topUp.failure(ids, organisationId);
    return {
      ...ids,
      organisationId,
      status: 'processed',
      reason: reasons(match.note, recorded ? undefined : alreadyRecorded(entry.invoiceId), topUp?.note),
    };
  }

  /** An automatic top-up's invoice (spec §16.4): its pack granted, once per invoice whichever event says it is paid. */
  private async grantRecharge(
    manager: EntityManager,
    invoice: InvoiceObject,
    invoiceId: string,
  ): Promise<{ note: string } | { failure: (ids: Partial<HandlerOutcome>, organisationId: string) => HandlerOutcome } | undefined> {
    const metadata = invoice.metadata as Record<string, string> | null | undefined;
    if (metadata?.purpose !== RECHARGE_PURPOSE) return undefined;
    const purchase = rechargePurchaseOf(metadata);
    if (!purchase) return { failure: (ids, organisationId) => failed('invalid_event', "an automatic top-up's invoice whose metadata names no pack or no recharge id", { ...ids, organisationId }) };
    const granted = await this.topUps.grantPaidRecharge(manager, { ...purchase, invoiceId });
    if (!granted) return { failure: (ids, organisationId) => failed('pack_unknown', `no recharge ${purchase.rechargeId} or no credit pack "${purchase.pack.slice(0, 64)}"`, { ...ids, organisationId }) };
    const what = `${granted.grant.amount} ${granted.grant.metric} (grant ${granted.grant.id})`;
    return { note: granted.created ? `granted ${what}` : `already granted: ${what}` };
  }
}

const alreadyRecorded = (invoiceId: string) => `invoice ${invoiceId} was already recorded`;

/** An invoice event, validated: its ids, metadata, lines and the billing-history entry it pays for. */
function readInvoice(
  event: ProviderEvent<InvoiceObject>,
  config: AppConfig,
):
  | { failure: HandlerOutcome }
  | {
      ids: { subscriptionId?: string; customerId?: string };
      metadataIds: unknown[];
      lines: InvoiceLine[];
      entry: Omit<PaidInvoice, 'organisationId'>;
    } {
  const invoice = event.data.object;
  const lines = linesOf(invoice);
  const subscriptionId = subscriptionOf(invoice, lines);
  const ids = { subscriptionId, customerId: idOf(invoice.customer) };
  const invoiceId = idOf(invoice.id);
  if (!invoiceId) return { failure: failed('invoice_invalid', 'the invoice has no id', ids) };
  const amountPaid = invoice.amount_paid;
  if (amountPaid === undefined || !Number.isSafeInteger(amountPaid) || amountPaid < 0) {
    return { failure: failed('invoice_invalid', 'amount_paid is not a non-negative integer', ids) };
  }
  if (typeof invoice.currency !== 'string' || !/^[a-z]{3}$/i.test(invoice.currency)) {
    return { failure: failed('invoice_invalid', 'currency is not a three-letter code', ids) };
  }
  const period = periodOf(invoice, lines);
  return {
    ids,
    lines,
    metadataIds: [
      invoice.parent?.subscription_details?.metadata?.organisation_id,
      invoice.subscription_details?.metadata?.organisation_id,
      invoice.metadata?.organisation_id,
    ],
    entry: {
      invoiceId,
      subscriptionId: subscriptionId ?? null,
      amountPaid,
      currency: invoice.currency.toUpperCase(),
      periodStart: period.start,
      periodEnd: period.end,
      paidAt: secondsOf(invoice.status_transitions?.paid_at) ?? secondsOf(invoice.created) ?? event.created,
      hostedInvoiceUrl: invoiceUrl(invoice.hosted_invoice_url, config),
    },
  };
}

@Injectable()
@HandlesEvent(EVENT_TYPES.invoicePaymentSucceeded)
export class InvoicePaymentSucceededHandler extends PaidInvoiceHandler {}

@Injectable()
@HandlesEvent(EVENT_TYPES.invoicePaid)
export class InvoicePaidHandler extends PaidInvoiceHandler {}

/**
 * Only an https: URL is handed on to the web app (a `javascript:` one would run in its page). The one
 * exception: the sandbox's own invoice pages, served over http on a laptop.
 */
function invoiceUrl(value: unknown, config: AppConfig): string | null {
  if (typeof value !== 'string' || value.length > 2048) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol === 'https:') return value;
  const sandboxPage =
    config.provider === 'sandbox' &&
    url.protocol === 'http:' &&
    url.pathname.startsWith('/sandbox/invoices/') &&
    (url.origin === config.publicUrl?.origin || url.hostname === 'localhost');
  return sandboxPage ? value : null;
}

type InvoiceLine = NonNullable<InvoiceObject['lines']>['data'][number];

/** A line's price: today `pricing.price_details.price`, before `price` (an object or an id). */
function priceOf(line: InvoiceLine): string | undefined {
  return idOf(line.pricing?.price_details?.price) ?? idOf(line.price) ?? idOf(line.plan);
}

function linesOf(invoice: InvoiceObject): InvoiceLine[] {
  return invoice.lines?.data ?? [];
}

/** Today: `parent.subscription_details.subscription` (or on a line's parent); before: `invoice.subscription`. */
function subscriptionOf(invoice: InvoiceObject, lines: InvoiceLine[]): string | undefined {
  const fromLines = lines
    .map((line) => idOf(line.parent?.subscription_item_details?.subscription) ?? idOf(line.subscription))
    .find(Boolean);
  return idOf(invoice.parent?.subscription_details?.subscription) ?? idOf(invoice.subscription) ?? fromLines;
}

/**
 * The service period paid for: the span of the subscription lines' periods (else of all lines). The
 * invoice's own period_start/period_end describe when pending items were collected, so only a last resort.
 */
function periodOf(invoice: InvoiceObject, lines: InvoiceLine[]): { start: number | null; end: number | null } {
  const subscriptionLines = lines.filter((line) => line.parent?.subscription_item_details || line.subscription);
  for (const group of [subscriptionLines, lines]) {
    const starts = group.map((line) => secondsOf(line.period?.start)).filter((s) => s !== undefined);
    const ends = group.map((line) => secondsOf(line.period?.end)).filter((s) => s !== undefined);
    if (starts.length && ends.length) return { start: Math.min(...starts), end: Math.max(...ends) };
  }
  return { start: secondsOf(invoice.period_start) ?? null, end: secondsOf(invoice.period_end) ?? null };
}
