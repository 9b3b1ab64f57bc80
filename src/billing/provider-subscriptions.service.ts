import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';

export interface KnownSubscription {
  organisationId: string;
  /** A `customer.subscription.deleted` event was applied: deleted for good. */
  deleted: boolean;
}

/**
 * The provider subscriptions tied to an organisation (table provider_subscriptions). Lets events without
 * metadata find their organisation, and remembers deletions: a deleted subscription never comes back.
 * Every method runs in the caller's transaction (`manager`).
 */
@Injectable()
export class ProviderSubscriptions {
  async find(manager: EntityManager, subscriptionId: string): Promise<KnownSubscription | undefined> {
    const [row] = await preparedQuery(
      manager,
      `SELECT organisation_id, deleted_event_created IS NOT NULL AS deleted FROM provider_subscriptions
       WHERE subscription_id = $1`,
      [subscriptionId],
    );
    return row && { organisationId: row.organisation_id, deleted: row.deleted };
  }

  /** Ties the subscription to the organisation; the first link wins, a linked subscription never moves. */
  async link(manager: EntityManager, subscriptionId: string, organisationId: string, customerId: string | undefined): Promise<void> {
    await preparedQuery(
      manager,
      `INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id) VALUES ($1, $2, $3)
       ON CONFLICT (subscription_id) DO NOTHING`,
      [subscriptionId, organisationId, customerId ?? null],
    );
  }

  /** Records the deletion (the first deletion event's `created` is kept). */
  async markDeleted(manager: EntityManager, subscriptionId: string, eventCreated: number): Promise<void> {
    await preparedQuery(
      manager,
      `UPDATE provider_subscriptions SET deleted_event_created = COALESCE(deleted_event_created, $2)
       WHERE subscription_id = $1`,
      [subscriptionId, eventCreated],
    );
  }
}
