import { EntityManager } from 'typeorm';

/**
 * What a change of anything a license is derived from (an organisation's subscriptions, its overrides) tells
 * the module above that notifies the web app (notifications implements it; the root module binds it): the
 * organisation's license may have changed. Called in the change's transaction, after its writes, so that the
 * web app is told if and only if the change commits. A port, because the modules that change those things
 * stand below the one that notifies.
 */
export abstract class LicenseChanges {
  abstract licenseMayHaveChanged(manager: EntityManager, organisationId: string): Promise<unknown>;
}
