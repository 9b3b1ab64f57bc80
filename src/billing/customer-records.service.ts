import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { transaction } from '../database/transaction';
import { IdentityService } from '../identity/identity.service';
import { PaymentProvider } from '../provider/payment-provider.port';

/**
 * An organisation's customer record with the provider, for purchases that need one before paying (a credit pack:
 * a checkout of mode payment makes no customer of its own that a later top-up could charge). A subscription's
 * checkout lets the provider make the customer and its events link it; this makes and links it first.
 */
@Injectable()
export class CustomerRecords {
  private readonly logger = new Logger('CustomerRecords');

  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /**
   * The organisation's customer, made at the provider and linked when it has none. Two requests making one at the
   * same moment link the first (identity's rule: the first link wins); the other's customer stays unused at the
   * provider (it has no card and no payment), and both answer the linked one.
   */
  async ensure(organisationId: string): Promise<string> {
    const stored = await this.identity.customerOf(organisationId);
    if (stored) return stored;
    const { id } = await this.provider.createCustomer(organisationId);
    const link = await transaction(this.db, (m) => this.identity.linkCustomer(m, organisationId, id));
    if (link.linked) return id;
    const linked = await this.identity.customerOf(organisationId);
    this.logger.warn({ msg: 'another request linked a customer first; the one made here stays unused', organisationId, customerId: id, linked });
    if (!linked) throw new Error(`the customer ${id} made for organisation ${organisationId} could not be linked`);
    return linked;
  }

  /**
   * The stored customer `stale` is unknown to the provider (deleted there, or a test-mode id after switching to a
   * live key): forget it and make a new one.
   */
  async replace(organisationId: string, stale: string): Promise<string> {
    this.logger.warn({ msg: 'the payment provider does not know the stored customer; making a new one', organisationId, customerId: stale });
    await this.identity.forgetCustomer(organisationId, stale);
    return this.ensure(organisationId);
  }
}
