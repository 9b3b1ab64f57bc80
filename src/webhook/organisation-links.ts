import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { KnownSubscription } from '../subscriptions/subscriptions.service';
import { IdentityService } from '../identity/identity.service';

/** The organisation id metadata gives: the first of `metadataIds` that is a non-empty string. */
function metadataOrganisation(metadataIds: unknown[]): string | undefined {
  return metadataIds.find((id) => typeof id === 'string' && id !== '') as string | undefined;
}

export interface OrganisationMatch {
  organisationId?: string;
  /** Metadata names another organisation than the one the subscription or customer is linked to. */
  conflict?: string;
  /** Why a metadata id was not used, for the ledger's reason. */
  note?: string;
}

/**
 * Finds the organisation of a provider event and ties its customer to it. The tables involved belong to
 * identity (organisations and their customer record) and billing (subscriptions): this asks their
 * services, in the event's transaction.
 */
@Injectable()
export class OrganisationLinks {
  constructor(private readonly identity: IdentityService) {}

  /**
   * The organisation already linked to the event's subscription (`known`), else to its customer; else the
   * first metadata `organisation_id` present, when it names an existing organisation. Metadata never moves
   * what is linked: naming another organisation is a conflict. A metadata id that is not a UUID or names
   * no organisation is not trusted, only noted.
   */
  async resolve(
    manager: EntityManager,
    metadataIds: unknown[],
    customerId: string | undefined,
    known: KnownSubscription | undefined,
  ): Promise<OrganisationMatch> {
    const given = metadataOrganisation(metadataIds);
    // The subscription's organisation exists (foreign key): no need to ask identity.
    if (known && (given === undefined || given === known.organisationId)) return { organisationId: known.organisationId };
    const found = await this.identity.findForEvent(manager, { id: given, customerId });
    const linked = known?.organisationId ?? found.byCustomer ?? undefined;
    if (found.byId && linked && found.byId !== linked) {
      const link = known ? `subscription is linked to ${linked}` : `customer ${customerId} is linked to ${linked}`;
      return { conflict: `metadata.organisation_id names ${found.byId}, but the ${link}` };
    }
    const note = given !== undefined && !found.byId ? `metadata.organisation_id "${given.slice(0, 64)}" names no organisation` : undefined;
    return { organisationId: found.byId ?? linked, note };
  }

  /**
   * Ties the customer to the organisation (its customer record). The first link wins: a customer already
   * tied to another organisation is never moved, and an organisation that already has a customer record
   * keeps it. Answers why the link was left as it was, for the ledger's reason.
   */
  async linkCustomer(manager: EntityManager, organisationId: string, customerId: string | undefined): Promise<string | undefined> {
    if (!customerId) return undefined;
    const { owner, linked } = await this.identity.linkCustomer(manager, organisationId, customerId);
    if (linked || owner === organisationId) return undefined;
    return owner
      ? `customer ${customerId} stays linked to another organisation`
      : `organisation keeps its existing customer record; ${customerId} not linked`;
  }
}
