import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { transaction } from '../../database/transaction';
import { EVENT_TYPES, ProviderEvent } from '../provider-event';
import {
  SANDBOX_CURRENCY,
  SubscriptionState,
  addMonth,
  eventEnvelope,
  invoiceObject,
  nowSeconds,
  randomId,
  sandboxPrice,
  subscriptionObject,
} from './provider-events';

const CHECKOUT_TTL_S = 24 * 3600;
const PORTAL_TTL_S = 3600;

export interface SandboxCheckout {
  id: string;
  tier: string;
  amount_total: number;
  currency: string;
  metadata: Record<string, string>;
  client_reference_id: string | null;
  customer_id: string | null;
  subscription_id: string | null;
  success_url: string;
  cancel_url: string;
  status: 'open' | 'complete';
  payment_status: 'unpaid' | 'paid';
  created: number;
  expires_at: number;
}

export interface SandboxPortal {
  id: string;
  customer_id: string;
  return_url: string;
  created: number;
  expires_at: number;
}

export interface SandboxInvoice {
  id: string;
  customer_id: string;
  subscription_id: string;
  tier: string;
  amount_paid: number;
  currency: string;
  period_start: number;
  period_end: number;
  paid_at: number;
}

export interface PendingEvent {
  seq: number;
  id: string;
  payload: ProviderEvent;
}

/** The sandbox provider's state, in PostgreSQL. Each state change stores the events it causes (outbox). */
@Injectable()
export class SandboxStore {
  constructor(private readonly db: DataSource) {}

  async createCheckout(input: {
    tier: string;
    metadata: Record<string, string>;
    clientReferenceId: string;
    customerId?: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<SandboxCheckout> {
    const created = nowSeconds();
    const [row] = await this.db.query(
      `INSERT INTO sandbox_checkout_sessions
         (id, tier, amount_total, currency, metadata, client_reference_id, customer_id, success_url, cancel_url, created, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [
        randomId('cs_test_', 58),
        input.tier,
        sandboxPrice(input.tier),
        SANDBOX_CURRENCY,
        JSON.stringify(input.metadata),
        input.clientReferenceId,
        input.customerId ?? null,
        input.successUrl,
        input.cancelUrl,
        created,
        created + CHECKOUT_TTL_S,
      ],
    );
    return row;
  }

  async customerExists(id: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM sandbox_customers WHERE id = $1`, [id]);
    return rows.length > 0;
  }

  async findCheckout(id: string): Promise<SandboxCheckout | undefined> {
    const [row] = await this.db.query(`SELECT * FROM sandbox_checkout_sessions WHERE id = $1`, [id]);
    return row;
  }

  /**
   * Pays an open session: customer, subscription, invoice and their two events, in one transaction.
   * Paying a session that is already complete changes nothing (the caller re-delivers what is pending).
   */
  async completeCheckout(id: string, invoiceUrl: (invoiceId: string) => string): Promise<SandboxCheckout | 'expired' | undefined> {
    return transaction(this.db, async (m) => {
      const [session]: SandboxCheckout[] = await m.query(`SELECT * FROM sandbox_checkout_sessions WHERE id = $1 FOR UPDATE`, [id]);
      if (!session || session.status === 'complete') return session;
      const now = nowSeconds();
      if (session.expires_at <= now) return 'expired';

      const customerId = session.customer_id ?? randomId('cus_', 14);
      await m.query(`INSERT INTO sandbox_customers (id, created) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, [customerId, now]);
      const sub: SubscriptionState = {
        id: randomId('sub_'),
        customerId,
        itemId: randomId('si_', 14),
        tier: session.tier,
        status: 'active',
        metadata: session.metadata,
        created: now,
        periodStart: now,
        periodEnd: addMonth(now),
        canceledAt: null,
      };
      await m.query(
        `INSERT INTO sandbox_subscriptions
           (id, customer_id, item_id, tier, status, metadata, created, current_period_start, current_period_end, last_event_created)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $7)`,
        [sub.id, customerId, sub.itemId, sub.tier, sub.status, JSON.stringify(sub.metadata), now, sub.periodStart, sub.periodEnd],
      );
      const invoiceId = randomId('in_');
      await m.query(
        `INSERT INTO sandbox_invoices (id, customer_id, subscription_id, tier, amount_paid, currency, period_start, period_end, paid_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [invoiceId, customerId, sub.id, sub.tier, session.amount_total, session.currency, sub.periodStart, sub.periodEnd, now],
      );
      const invoice = invoiceObject({
        id: invoiceId,
        customerId,
        subscriptionId: sub.id,
        subscriptionMetadata: sub.metadata,
        itemId: sub.itemId,
        tier: sub.tier,
        amountPaid: session.amount_total,
        periodStart: sub.periodStart,
        periodEnd: sub.periodEnd,
        paidAt: now,
        hostedInvoiceUrl: invoiceUrl(invoiceId),
      });
      await this.addEvent(m, id, eventEnvelope(EVENT_TYPES.subscriptionCreated, subscriptionObject(sub), now));
      await this.addEvent(m, id, eventEnvelope(EVENT_TYPES.invoicePaymentSucceeded, invoice, now));
      // UPDATE … RETURNING answers [rows, affectedCount].
      const [[paid]] = await m.query(
        `UPDATE sandbox_checkout_sessions
            SET status = 'complete', payment_status = 'paid', customer_id = $2, subscription_id = $3
          WHERE id = $1 RETURNING *`,
        [id, customerId, sub.id],
      );
      return paid;
    });
  }

  /** Undefined for a customer the sandbox never created (the provider answers 404 there). */
  async createPortal(customerId: string, returnUrl: string): Promise<SandboxPortal | undefined> {
    const created = nowSeconds();
    const [row] = await this.db.query(
      `INSERT INTO sandbox_portal_sessions (id, customer_id, return_url, created, expires_at)
       SELECT $1, id, $3, $4, $5 FROM sandbox_customers WHERE id = $2 RETURNING *`,
      [randomId('bps_', 40), customerId, returnUrl, created, created + PORTAL_TTL_S],
    );
    return row;
  }

  async findPortal(id: string): Promise<SandboxPortal | undefined> {
    const [row] = await this.db.query(`SELECT * FROM sandbox_portal_sessions WHERE id = $1`, [id]);
    return row;
  }

  async activeSubscriptions(customerId: string): Promise<{ id: string; tier: string; status: string; current_period_end: number }[]> {
    return this.db.query(
      `SELECT id, tier, status, current_period_end FROM sandbox_subscriptions
        WHERE customer_id = $1 AND status <> 'canceled' ORDER BY created, id`,
      [customerId],
    );
  }

  /**
   * Switches the tier (`customer.subscription.updated`) or cancels (`.deleted`) one of the portal customer's
   * live subscriptions. Returns false when the subscription is not the customer's or is already canceled.
   */
  async changeSubscription(portal: SandboxPortal, subscriptionId: string, change: { tier: string } | 'cancel'): Promise<boolean> {
    return transaction(this.db, async (m) => {
      const [row] = await m.query(
        `SELECT * FROM sandbox_subscriptions WHERE id = $1 AND customer_id = $2 AND status <> 'canceled' FOR UPDATE`,
        [subscriptionId, portal.customer_id],
      );
      if (!row) return false;
      // Strictly increasing per subscription, so two changes within one second still apply in order.
      const created = Math.max(nowSeconds(), Number(row.last_event_created) + 1);
      const before = toState(row);
      const after: SubscriptionState =
        change === 'cancel' ? { ...before, status: 'canceled', canceledAt: created } : { ...before, tier: change.tier };
      await m.query(
        `UPDATE sandbox_subscriptions SET tier = $2, status = $3, canceled_at = $4, last_event_created = $5 WHERE id = $1`,
        [subscriptionId, after.tier, after.status, after.canceledAt, created],
      );
      const event =
        change === 'cancel'
          ? eventEnvelope(EVENT_TYPES.subscriptionDeleted, subscriptionObject(after), created)
          : eventEnvelope(EVENT_TYPES.subscriptionUpdated, subscriptionObject(after), created, {
              items: subscriptionObject(before).items,
            });
      await this.addEvent(m, portal.id, event);
      return true;
    });
  }

  /** The subscription as the provider's API would return it now. */
  async findSubscription(id: string): Promise<Record<string, any> | undefined> {
    const [row] = await this.db.query(`SELECT * FROM sandbox_subscriptions WHERE id = $1`, [id]);
    return row && subscriptionObject(toState(row));
  }

  /** The sandbox's own event log, as the provider's `GET /v1/events` would list it (delivered or not). */
  async listEvents(types: readonly string[], createdGte: number): Promise<ProviderEvent[]> {
    const rows = await this.db.query(
      `SELECT payload FROM sandbox_events WHERE type = ANY($1) AND (payload ->> 'created')::bigint >= $2 ORDER BY seq`,
      [types, createdGte],
    );
    return rows.map((r: { payload: ProviderEvent }) => r.payload);
  }

  async findInvoice(id: string): Promise<SandboxInvoice | undefined> {
    const [row] = await this.db.query(`SELECT * FROM sandbox_invoices WHERE id = $1`, [id]);
    return row;
  }

  async pendingEvents(sourceId: string): Promise<PendingEvent[]> {
    return this.db.query(
      `SELECT seq, id, payload FROM sandbox_events WHERE source_id = $1 AND delivered_at IS NULL ORDER BY seq`,
      [sourceId],
    );
  }

  async markDelivered(seq: number): Promise<void> {
    await this.db.query(`UPDATE sandbox_events SET delivered_at = now(), last_error = NULL WHERE seq = $1`, [seq]);
  }

  async markFailed(seq: number, error: string): Promise<void> {
    await this.db.query(`UPDATE sandbox_events SET last_error = $2 WHERE seq = $1`, [seq, error.slice(0, 2000)]);
  }

  private async addEvent(m: EntityManager, sourceId: string, event: ProviderEvent): Promise<void> {
    await m.query(`INSERT INTO sandbox_events (id, source_id, type, payload) VALUES ($1, $2, $3, $4)`, [
      event.id,
      sourceId,
      event.type,
      JSON.stringify(event),
    ]);
  }
}

function toState(row: Record<string, any>): SubscriptionState {
  return {
    id: row.id,
    customerId: row.customer_id,
    itemId: row.item_id,
    tier: row.tier,
    status: row.status,
    metadata: row.metadata,
    created: Number(row.created),
    periodStart: Number(row.current_period_start),
    periodEnd: Number(row.current_period_end),
    canceledAt: row.canceled_at === null ? null : Number(row.canceled_at),
  };
}
