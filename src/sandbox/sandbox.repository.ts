import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, MoreThan, Not } from 'typeorm';
import { ProviderEvent } from '../provider/provider-event';
import { SandboxCheckoutSession } from './sandbox-checkout-session.entity';
import { SandboxCustomer } from './sandbox-customer.entity';
import { SandboxEvent } from './sandbox-event.entity';
import { SandboxInvoice } from './sandbox-invoice.entity';
import { SandboxMeterEvent } from './sandbox-meter-event.entity';
import { SandboxPortalSession } from './sandbox-portal-session.entity';
import { SandboxSchedule } from './sandbox-schedule.entity';
import { SandboxSubscription } from './sandbox-subscription.entity';

/** An event not yet delivered to the webhook endpoint. */
export interface PendingEvent {
  seq: number;
  id: string;
  payload: ProviderEvent;
}

/**
 * The sandbox provider's tables, through TypeORM's repositories (none of these paths is hot). A method
 * that is part of a state change takes the transaction's EntityManager `m`, first.
 */
/** Usage reported to one of the sandbox's meters within a period. */
export interface MeterTotal {
  eventName: string;
  total: number;
  events: number;
}

@Injectable()
export class SandboxRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insertCheckout(session: Omit<SandboxCheckoutSession, 'status' | 'paymentStatus' | 'subscriptionId'>): Promise<SandboxCheckoutSession> {
    const checkouts = this.db.getRepository(SandboxCheckoutSession);
    await checkouts.insert(session);
    return checkouts.findOneByOrFail({ id: session.id });
  }

  findCheckout(m: EntityManager, id: string): Promise<SandboxCheckoutSession | null> {
    return m.getRepository(SandboxCheckoutSession).findOneBy({ id });
  }

  /** The session, locked for the rest of the transaction `m`. */
  lockCheckout(m: EntityManager, id: string): Promise<SandboxCheckoutSession | null> {
    return m.getRepository(SandboxCheckoutSession).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  async markCheckoutPaid(
    m: EntityManager,
    id: string,
    paid: Pick<SandboxCheckoutSession, 'customerId' | 'subscriptionId' | 'invoiceId' | 'interval' | 'quantity' | 'amountTotal' | 'paymentStatus'>,
  ): Promise<SandboxCheckoutSession> {
    const checkouts = m.getRepository(SandboxCheckoutSession);
    await checkouts.update({ id }, { status: 'complete', ...paid });
    return checkouts.findOneByOrFail({ id });
  }

  /** Expires the session if it is open and its time is not up; false otherwise. */
  async expireOpenCheckout(id: string, now: number): Promise<boolean> {
    const { affected } = await this.db
      .getRepository(SandboxCheckoutSession)
      .update({ id, status: 'open', expiresAt: MoreThan(now) }, { status: 'expired' });
    return affected === 1;
  }

  customerExists(id: string): Promise<boolean> {
    return this.db.getRepository(SandboxCustomer).existsBy({ id });
  }

  /** Creates the customer unless it exists. */
  async ensureCustomer(m: EntityManager, customer: SandboxCustomer): Promise<void> {
    await m.createQueryBuilder().insert().into(SandboxCustomer).values(customer).orIgnore().execute();
  }

  findCustomer(m: EntityManager, id: string): Promise<SandboxCustomer | null> {
    return m.getRepository(SandboxCustomer).findOneBy({ id });
  }

  /** A card given at a checkout (or added in the portal) becomes the customer's default payment method. */
  async saveCard(m: EntityManager, customerId: string, paymentMethod: string): Promise<void> {
    await m.getRepository(SandboxCustomer).update({ id: customerId }, { defaultPaymentMethod: paymentMethod });
  }

  /** The customer, locked for the rest of the transaction `m`. */
  lockCustomer(m: EntityManager, id: string): Promise<SandboxCustomer | null> {
    return m.getRepository(SandboxCustomer).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** The portal's "decline the next charge" (true), or its use by a declined charge (false). */
  async setDeclineNextCharge(m: EntityManager, customerId: string, decline: boolean): Promise<void> {
    await m.getRepository(SandboxCustomer).update({ id: customerId }, { declineNextCharge: decline });
  }

  /** The invoice an automatic top-up's charge made (its `metadata.recharge_id`), if any. */
  async findRechargeInvoice(m: EntityManager, rechargeId: string): Promise<SandboxInvoice | undefined> {
    const [row] = await m.getRepository(SandboxInvoice).createQueryBuilder('i').where(`i.metadata ->> 'recharge_id' = :rechargeId`, { rechargeId }).getMany();
    return row;
  }

  async insertPortal(portal: SandboxPortalSession): Promise<SandboxPortalSession> {
    await this.db.getRepository(SandboxPortalSession).insert(portal);
    return portal;
  }

  findPortal(id: string): Promise<SandboxPortalSession | null> {
    return this.db.getRepository(SandboxPortalSession).findOneBy({ id });
  }

  async insertSubscription(m: EntityManager, subscription: SandboxSubscription): Promise<void> {
    await m.getRepository(SandboxSubscription).insert(subscription);
  }

  findSubscription(id: string): Promise<SandboxSubscription | null> {
    return this.db.getRepository(SandboxSubscription).findOneBy({ id });
  }

  /** The subscription (of `customerId` when given), locked for the rest of the transaction `m`. */
  lockSubscription(m: EntityManager, id: string, customerId?: string): Promise<SandboxSubscription | null> {
    return m.getRepository(SandboxSubscription).findOne({ where: customerId ? { id, customerId } : { id }, lock: { mode: 'pessimistic_write' } });
  }

  async saveSubscription(m: EntityManager, row: SandboxSubscription): Promise<void> {
    await m.getRepository(SandboxSubscription).update({ id: row.id }, row);
  }

  /** The customer's subscriptions not canceled, oldest first. */
  liveSubscriptions(customerId: string): Promise<SandboxSubscription[]> {
    return this.db.getRepository(SandboxSubscription).find({
      where: { customerId, status: Not('canceled') },
      order: { created: 'ASC', id: 'ASC' },
    });
  }

  /** The organisation's subscription (its checkouts' metadata names it): the newest live one, else the newest. */
  async subscriptionOf(organisationId: string): Promise<SandboxSubscription | null> {
    return this.db
      .getRepository(SandboxSubscription)
      .createQueryBuilder('s')
      .where(`s.metadata ->> 'organisation_id' = :organisationId`, { organisationId })
      .orderBy(`CASE WHEN s.status = 'canceled' THEN 1 ELSE 0 END`, 'ASC')
      .addOrderBy('s.created', 'DESC')
      .addOrderBy('s.id', 'DESC')
      .getOne();
  }

  async insertSchedule(m: EntityManager, schedule: SandboxSchedule): Promise<void> {
    await m.getRepository(SandboxSchedule).insert(schedule);
  }

  findSchedule(m: EntityManager, id: string): Promise<SandboxSchedule | null> {
    return m.getRepository(SandboxSchedule).findOneBy({ id });
  }

  /** The schedules of these ids (a page of subscriptions' own, for `expand[]=data.schedule`). */
  findSchedules(ids: string[]): Promise<SandboxSchedule[]> {
    return ids.length ? this.db.getRepository(SandboxSchedule).findBy({ id: In(ids) }) : Promise.resolve([]);
  }

  async updateSchedule(m: EntityManager, id: string, change: Partial<Pick<SandboxSchedule, 'status' | 'releasedAt' | 'next'>>): Promise<void> {
    await m.getRepository(SandboxSchedule).update({ id }, change);
  }

  async insertInvoice(m: EntityManager, invoice: SandboxInvoice): Promise<void> {
    await m.getRepository(SandboxInvoice).insert(invoice);
  }

  findInvoice(id: string): Promise<SandboxInvoice | null> {
    return this.db.getRepository(SandboxInvoice).findOneBy({ id });
  }

  /** Keeps a meter event; false when one with its identifier is already kept (the provider's duplicate). */
  async insertMeterEvent(event: SandboxMeterEvent): Promise<boolean> {
    const result = await this.db.getRepository(SandboxMeterEvent).createQueryBuilder().insert().values(event).orIgnore().execute();
    return result.identifiers.some(Boolean);
  }

  /** The customer's metered usage dated within [from, to), summed per event name. */
  meterTotals(customerId: string, from: number, to: number): Promise<MeterTotal[]> {
    return this.db
      .getRepository(SandboxMeterEvent)
      .createQueryBuilder('e')
      .select('e.eventName', 'eventName')
      .addSelect('sum(e.value)::float8', 'total')
      .addSelect('count(*)::int', 'events')
      .where('e.customerId = :customerId AND e.timestamp >= :from AND e.timestamp < :to', { customerId, from, to })
      .groupBy('e.eventName')
      .orderBy('e.eventName')
      .getRawMany();
  }

  /** Stores an event caused by a change of session `sourceId`, in that change's transaction. */
  async addEvent(m: EntityManager, sourceId: string, event: ProviderEvent): Promise<void> {
    await m.getRepository(SandboxEvent).insert({ id: event.id, sourceId, type: event.type, payload: event });
  }

  /**
   * A page of the event log as the provider's `GET /v1/events` lists it (delivered or not): newest first,
   * after the event `startingAfter`.
   */
  async listEvents(types: readonly string[], createdGte: number, startingAfter: string | undefined, limit: number): Promise<ProviderEvent[]> {
    const query = this.db
      .getRepository(SandboxEvent)
      .createQueryBuilder('e')
      .select(['e.seq', 'e.payload'])
      .where({ type: In([...types]) })
      .andWhere(`(e.payload ->> 'created')::bigint >= :createdGte`, { createdGte });
    if (startingAfter !== undefined) query.andWhere(`e.seq < (SELECT seq FROM sandbox_events WHERE id = :startingAfter)`, { startingAfter });
    const events = await query.orderBy('e.seq', 'DESC').limit(limit).getMany();
    return events.map((e) => e.payload as ProviderEvent);
  }

  /** A page of every subscription, canceled ones too, newest first, after the subscription `startingAfter`. */
  listSubscriptions(startingAfter: string | undefined, limit: number): Promise<SandboxSubscription[]> {
    const query = this.db.getRepository(SandboxSubscription).createQueryBuilder('s');
    if (startingAfter !== undefined) {
      query.where(`(s.created, s.id) < (SELECT created, id FROM sandbox_subscriptions WHERE id = :startingAfter)`, { startingAfter });
    }
    return query.orderBy('s.created', 'DESC').addOrderBy('s.id', 'DESC').limit(limit).getMany();
  }

  /** The session's events not yet delivered, in the order they happened. */
  async pendingEvents(sourceId: string): Promise<PendingEvent[]> {
    const events = await this.db.getRepository(SandboxEvent).find({
      select: { seq: true, id: true, payload: true },
      where: { sourceId, deliveredAt: IsNull() },
      order: { seq: 'ASC' },
    });
    return events.map(({ seq, id, payload }) => ({ seq, id, payload: payload as ProviderEvent }));
  }

  async markDelivered(seq: number): Promise<void> {
    await this.db.getRepository(SandboxEvent).update({ seq }, { deliveredAt: () => 'now()', lastError: null });
  }

  async markFailed(seq: number, error: string): Promise<void> {
    await this.db.getRepository(SandboxEvent).update({ seq }, { lastError: error });
  }
}
