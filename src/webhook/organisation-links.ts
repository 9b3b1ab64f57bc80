import { Sql } from './transaction';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Serialises, across instances, every event touching one customer or subscription id: an event that
 * finds no organisation and one that links that id cannot interleave, so an unmatched event is either
 * seen by the linking transaction or committed after it and matched directly. Keys are taken in sorted
 * order so two events never wait on each other: all in one statement, which takes them in the array's
 * order (ordinality). It must stay a statement of its own: the look-ups after it need a snapshot taken
 * once the locks are held.
 */
export async function lockProviderIds(sql: Sql, ids: (string | undefined)[]): Promise<void> {
  const keys = [...new Set(ids.filter((id): id is string => !!id))].sort().map((id) => `webhook:${id}`);
  if (!keys.length) return;
  await sql(
    `SELECT pg_advisory_xact_lock(hashtextextended(key, 0))
     FROM unnest($1::text[]) WITH ORDINALITY AS k(key, n) ORDER BY n`,
    [keys],
  );
}

export interface OrganisationMatch {
  organisationId?: string;
  /** Why a metadata id was not used, for the ledger's reason. */
  note?: string;
}

/**
 * The event's organisation: the first metadata `organisation_id` present, when it names an existing
 * organisation; else the organisation already linked to the subscription id, then to the customer id.
 * A metadata id that is not a UUID or names no organisation is not trusted, only noted.
 */
export async function resolveOrganisation(
  sql: Sql,
  metadataIds: unknown[],
  customerId: string | undefined,
  subscriptionId: string | undefined,
): Promise<OrganisationMatch> {
  let note: string | undefined;
  const given = metadataIds.find((id) => typeof id === 'string' && id !== '') as string | undefined;
  if (given !== undefined) {
    const [org] = UUID.test(given) ? await sql(`SELECT id FROM organisations WHERE id = $1`, [given]) : [];
    if (org) return { organisationId: org.id };
    note = `metadata.organisation_id "${given.slice(0, 64)}" names no organisation`;
  }
  if (subscriptionId) {
    const [row] = await sql(`SELECT organisation_id FROM provider_subscriptions WHERE subscription_id = $1`, [
      subscriptionId,
    ]);
    if (row) return { organisationId: row.organisation_id, note };
  }
  if (customerId) {
    const [row] = await sql(`SELECT id FROM organisations WHERE provider_customer_id = $1`, [customerId]);
    if (row) return { organisationId: row.id, note };
  }
  return { note };
}

/**
 * Ties the subscription and its customer to the organisation. The first link wins: a subscription or
 * customer already tied to another organisation is never moved, and an organisation that already has
 * a customer record keeps it. Returns a note when something was left as it was.
 */
export async function linkSubscription(
  sql: Sql,
  organisationId: string,
  subscriptionId: string,
  customerId: string | undefined,
): Promise<string | undefined> {
  await sql(
    `INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id) VALUES ($1, $2, $3)
     ON CONFLICT (subscription_id) DO NOTHING`,
    [subscriptionId, organisationId, customerId ?? null],
  );
  if (!customerId) return undefined;
  const [owner] = await sql(`SELECT id FROM organisations WHERE provider_customer_id = $1`, [customerId]);
  if (owner) {
    return owner.id === organisationId ? undefined : `customer ${customerId} stays linked to another organisation`;
  }
  const linked = await sql(
    `UPDATE organisations SET provider_customer_id = $2 WHERE id = $1 AND provider_customer_id IS NULL RETURNING id`,
    [organisationId, customerId],
  );
  return linked.length ? undefined : `organisation keeps its existing customer record; ${customerId} not linked`;
}
