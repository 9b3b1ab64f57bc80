import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { BillingHistoryEntry } from './billing-history.entity';

/**
 * Every query of billing_history: the only file with SQL for it. The page is a cold path (TypeORM's
 * QueryBuilder); the record runs in the webhook's transaction, hand-written and prepared.
 */

/** A paid invoice as recorded in billing history. */
export interface PaidInvoice {
  organisationId: string;
  invoiceId: string;
  subscriptionId: string | null;
  /** Integer minor units. */
  amountPaid: number;
  /** Upper-case ISO code. */
  currency: string;
  periodStart: number | null;
  periodEnd: number | null;
  paidAt: number;
  hostedInvoiceUrl: string | null;
}

export type HistoryRow = Omit<PaidInvoice, 'organisationId'>;

/** Where a page starts: after this entry, in (paid_at, id) order. */
export interface HistoryCursor {
  paidAt: number;
  id: string;
}

const RECORD_SQL = `
  INSERT INTO billing_history (organisation_id, invoice_id, subscription_id, amount_paid, currency,
    period_start, period_end, paid_at, hosted_invoice_url)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (invoice_id) DO NOTHING RETURNING id`;

@Injectable()
export class BillingHistoryRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Up to `limit` entries of the organisation, newest first, after `cursor` (from the newest when null). */
  async page(organisationId: string, cursor: HistoryCursor | null, limit: number): Promise<HistoryRow[]> {
    const query = this.db
      .getRepository(BillingHistoryEntry)
      .createQueryBuilder('h')
      .select(['h.id', 'h.invoiceId', 'h.subscriptionId', 'h.amountPaid', 'h.currency', 'h.periodStart', 'h.periodEnd', 'h.paidAt', 'h.hostedInvoiceUrl'])
      .where('h.organisationId = :organisationId', { organisationId })
      // Keyset on (paid_at, id) follows the index and stays stable while new invoices arrive.
      .orderBy('h.paidAt', 'DESC')
      .addOrderBy('h.id', 'DESC')
      .limit(limit);
    if (cursor) query.andWhere('(h.paidAt, h.id) < (:paidAt, :id)', { paidAt: cursor.paidAt, id: cursor.id });
    const rows = await query.getMany();
    return rows.map(({ invoiceId, subscriptionId, amountPaid, currency, periodStart, periodEnd, paidAt, hostedInvoiceUrl }) => ({
      invoiceId,
      subscriptionId,
      amountPaid,
      currency,
      periodStart,
      periodEnd,
      paidAt,
      hostedInvoiceUrl,
    }));
  }

  /** The entry of this invoice id if it is the organisation's. */
  async cursorOf(organisationId: string, invoiceId: string): Promise<HistoryCursor | undefined> {
    const row = await this.db.getRepository(BillingHistoryEntry).findOne({ select: { paidAt: true, id: true }, where: { organisationId, invoiceId } });
    return row ? { paidAt: row.paidAt, id: row.id } : undefined;
  }

  /** Adds the invoice unless its id is recorded; false when it was. */
  async record(m: EntityManager, invoice: PaidInvoice): Promise<boolean> {
    const inserted = await preparedQuery<{ id: string }>(m, RECORD_SQL, [
      invoice.organisationId,
      invoice.invoiceId,
      invoice.subscriptionId,
      invoice.amountPaid,
      invoice.currency,
      invoice.periodStart,
      invoice.periodEnd,
      invoice.paidAt,
      invoice.hostedInvoiceUrl,
    ]);
    return inserted.length > 0;
  }
}
