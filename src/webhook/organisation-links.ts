import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { KnownSubscription, ProviderSubscriptions } from '../billing/provider-subscriptions.service';
import { preparedQuery } from '../database/prepared';
import { IdentityService } from '../identity/identity.service';

/**
 * Serialises, across instances, every event touching one customer or subscription id: an event that
 * finds no organisation and one that links that id cannot interleave, so an unmatched event is either
 * seen by the linking transaction or committed after it and matched directly. Keys are taken in sorted
 * order so two events never wait on each other. The look-ups that rely on the locks must run in a later
 * statement than the one taking them, so that their snapshot is taken once the locks are held.
 */
export function lockKeys(ids: (string | undefined)[]): string[] {
  return [...new Set(ids.filter((id): id is string => !!id))].sort().map((id) => `webhook:${id}`);
}

/** SQL taking the advisory locks for the keys in text[] parameter `param`, in array order (unnest's order). */
export function takeLocksSql(param: string): string {
  return `SELECT count(pg_advisory_xact_lock(hashtextextended(key, 0))) AS locks FROM unnest(${param}::text[]) AS key`;
}

export async function lockProviderIds(manager: EntityManager, ids: (string | undefined)[]): Promise<void> {
  const keys = lockKeys(ids);
  if (keys.length) await preparedQuery(manager, takeLocksSql('$1'), [keys]);
}

export interface OrganisationMatch {
  organisationId?: string;
  /** Why a metadata id was not used, for the ledger's reason. */
  note?: string;
  /** The event's subscription, when it is already tied to an organisation. */
  subscription?: KnownSubscription;
}

/**
 * Finds the organisation of a provider event and ties its subscription and customer to it. The tables
 * involved belong to identity (organisations and their customer record) and billing (subscriptions):
 * this asks their services, in the event's transaction.
 */
@Injectable()
export class OrganisationLinks {
  constructor(
    private readonly identity: IdentityService,
    private readonly subscriptions: ProviderSubscriptions,
  ) {}

  /**
   * The event's organisation: the first metadata `organisation_id` present, when it names an existing
   * organisation; else the organisation already linked to the subscription id, then to the customer id.
   * A metadata id that is not a UUID or names no organisation is not trusted, only noted.
   */
  async resolve(
    manager: EntityManager,
    metadataIds: unknown[],
    customerId: string | undefined,
    subscriptionId: string | undefined,
  ): Promise<OrganisationMatch> {
    const given = metadataIds.find((id) => typeof id === 'string' && id !== '') as string | undefined;
    const subscription = subscriptionId ? await this.subscriptions.find(manager, subscriptionId) : undefined;
    // The subscription's organisation exists (foreign key): no need to ask identity again.
    if (subscription && (given === undefined || given === subscription.organisationId)) {
      return { organisationId: subscription.organisationId, subscription };
    }
    const found = await this.identity.findForEvent(manager, { id: given, customerId });
    if (found.byId) return { organisationId: found.byId, subscription };
    const note = given === undefined ? undefined : `metadata.organisation_id "${given.slice(0, 64)}" names no organisation`;
    return { organisationId: subscription?.organisationId ?? found.byCustomer ?? undefined, note, subscription };
  }

  /**
   * Ties the subscription and its customer to the organisation. The first link wins: a subscription or
   * customer already tied to another organisation is never moved, and an organisation that already has
   * a customer record keeps it. Answers why a link was left as it was, for the ledger's reason.
   */
  async link(
    manager: EntityManager,
    organisationId: string,
    match: OrganisationMatch,
    subscriptionId: string,
    customerId: string | undefined,
  ): Promise<string | undefined> {
    if (!match.subscription) await this.subscriptions.link(manager, subscriptionId, organisationId, customerId);
    if (!customerId) return undefined;
    const { owner, linked } = await this.identity.linkCustomer(manager, organisationId, customerId);
    if (linked || owner === organisationId) return undefined;
    return owner
      ? `customer ${customerId} stays linked to another organisation`
      : `organisation keeps its existing customer record; ${customerId} not linked`;
  }
}
