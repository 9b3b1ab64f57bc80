import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EVENT_TYPES, idOf, ProviderEvent } from '../provider/provider-event';
import { IdentityService } from '../identity/identity.service';
import { EventHandler, failed, HandlerOutcome, HandlesEvent } from './event-handler';
import { CustomerObject, customerSchema } from '../provider/provider-objects';

/**
 * customer.deleted: the organisation that had this customer has no customer record any more (the portal
 * answers 404 no_customer, the next checkout creates a new customer). A customer of no organisation is
 * another product's.
 */
@Injectable()
@HandlesEvent(EVENT_TYPES.customerDeleted)
export class CustomerDeletedHandler implements EventHandler<typeof customerSchema> {
  readonly schema = customerSchema;

  constructor(private readonly identity: IdentityService) {}

  providerIds(event: ProviderEvent<CustomerObject>): (string | undefined)[] {
    return [idOf(event.data.object.id)];
  }

  async handle(manager: EntityManager, event: ProviderEvent<CustomerObject>): Promise<HandlerOutcome> {
    const customerId = idOf(event.data.object.id);
    if (!customerId) return failed('invalid_event', 'the customer has no id');
    const organisationId = await this.identity.unlinkCustomer(manager, customerId);
    if (!organisationId) return { customerId, status: 'ignored', reason: 'no organisation has this customer' };
    return { customerId, organisationId, status: 'processed', reason: 'customer unlinked from its organisation' };
  }
}
