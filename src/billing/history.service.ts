import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { IdentityService } from '../identity/identity.service';
import { HistoryPage, HistoryQuery } from './history.dto';

const COLUMNS = `invoice_id, subscription_id, amount_paid, currency, period_start, period_end, paid_at, hosted_invoice_url`;

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

/**
 * Billing history (table billing_history): recorded from the provider's invoice events, listed by
 * GET /api/billing/history, newest first, keyset-paginated.
 */
@Injectable()
export class HistoryService {
  constructor(
    private readonly identity: IdentityService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async list(caller: AuthUser, query: HistoryQuery): Promise<HistoryPage> {
    const orgId = query.organisation_id;
    await this.identity.requireMember(caller, orgId);
    const limit = query.limit ?? 10;
    const cursor = query.starting_after === undefined ? null : await this.cursor(orgId, query.starting_after);
    // Keyset on (paid_at, id) follows the index and stays stable while new invoices arrive.
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM billing_history
       WHERE organisation_id = $1 AND ($2::bigint IS NULL OR (paid_at, id) < ($2::bigint, $3::uuid))
       ORDER BY paid_at DESC, id DESC
       LIMIT $4`,
      [orgId, cursor?.paid_at ?? null, cursor?.id ?? null, limit + 1],
    );
    return { data: rows.slice(0, limit), has_more: rows.length > limit };
  }

  /** Only an invoice of the same organisation is a cursor, so one cannot probe another's invoices. */
  private async cursor(orgId: string, invoiceId: string): Promise<{ paid_at: number; id: string }> {
    const [row] = await this.db.query(
      `SELECT paid_at, id FROM billing_history WHERE organisation_id = $1 AND invoice_id = $2`,
      [orgId, invoiceId],
    );
    if (!row) throw new AppException('invalid_cursor', 'starting_after is not an invoice_id of this history.');
    return row;
  }

  /** Adds one entry per invoice id, in the caller's transaction; false when the invoice was already recorded. */
  async record(manager: EntityManager, invoice: PaidInvoice): Promise<boolean> {
    const inserted = await preparedQuery<{ id: string }>(manager, RECORD_SQL, [
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

const RECORD_SQL = `
  INSERT INTO billing_history (organisation_id, invoice_id, subscription_id, amount_paid, currency,
    period_start, period_end, paid_at, hosted_invoice_url)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (invoice_id) DO NOTHING RETURNING id`;
