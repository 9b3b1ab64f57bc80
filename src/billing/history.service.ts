import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { IdentityService } from '../identity/identity.service';
import { BillingHistoryRepository, HistoryCursor, PaidInvoice } from './billing-history.repository';
import { HistoryPage, HistoryQuery } from './history.dto';

export type { PaidInvoice };

/**
 * Billing history (table billing_history): recorded from the provider's invoice events, listed by
 * GET /api/billing/history, newest first, keyset-paginated.
 */
@Injectable()
export class HistoryService {
  constructor(
    private readonly identity: IdentityService,
    private readonly repository: BillingHistoryRepository,
  ) {}

  async list(caller: AuthUser, query: HistoryQuery): Promise<HistoryPage> {
    const orgId = query.organisation_id;
    await this.identity.requireMember(caller, orgId);
    const limit = query.limit ?? 10;
    const cursor = query.starting_after === undefined ? null : await this.cursor(orgId, query.starting_after);
    const rows = await this.repository.page(orgId, cursor, limit + 1);
    const data = rows.slice(0, limit).map((r) => ({
      invoice_id: r.invoiceId,
      subscription_id: r.subscriptionId,
      amount_paid: r.amountPaid,
      currency: r.currency,
      period_start: r.periodStart,
      period_end: r.periodEnd,
      paid_at: r.paidAt,
      hosted_invoice_url: r.hostedInvoiceUrl,
    }));
    return { data, has_more: rows.length > limit };
  }

  /** Only an invoice of the same organisation is a cursor, so one cannot probe another's invoices. */
  private async cursor(orgId: string, invoiceId: string): Promise<HistoryCursor> {
    const cursor = await this.repository.cursorOf(orgId, invoiceId);
    if (!cursor) throw new AppException('invalid_cursor', 'starting_after is not an invoice_id of this history.');
    return cursor;
  }

  /** Adds one entry per invoice id, in the caller's transaction; false when the invoice was already recorded. */
  record(manager: EntityManager, invoice: PaidInvoice): Promise<boolean> {
    return this.repository.record(manager, invoice);
  }
}
