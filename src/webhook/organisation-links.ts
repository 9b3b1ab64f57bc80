import { Sql } from './transaction';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

export async function lockProviderIds(sql: Sql, ids: (string | undefined)[]): Promise<void> {
  const keys = lockKeys(ids);
  if (keys.length) await sql(takeLocksSql('$1'), [keys]);
}

export interface OrganisationMatch {
  organisationId?: string;
  /** Why a metadata id was not used, for the ledger's reason. */
  note?: string;
}

/**
 * The event's organisation: the first metadata `organisation_id` present, when it names an existing
 * organisation; else the organisation already linked to the subscription id, then to the customer id.
 * A metadata id that is not a UUID or names no organisation is not trusted, only noted. The three
 * look-ups are one statement; the order of preference is applied here.
 */
export async function resolveOrganisation(
  sql: Sql,
  metadataIds: unknown[],
  customerId: string | undefined,
  subscriptionId: string | undefined,
): Promise<OrganisationMatch> {
  const given = metadataIds.find((id) => typeof id === 'string' && id !== '') as string | undefined;
  const [found] = await sql<{ by_metadata: string | null; by_subscription: string | null; by_customer: string | null }>(
    `SELECT (SELECT id FROM organisations WHERE id = $1::uuid) AS by_metadata,
       (SELECT organisation_id FROM provider_subscriptions WHERE subscription_id = $2) AS by_subscription,
       (SELECT id FROM organisations WHERE provider_customer_id = $3) AS by_customer`,
    [given !== undefined && UUID.test(given) ? given : null, subscriptionId ?? null, customerId ?? null],
  );
  if (found.by_metadata) return { organisationId: found.by_metadata };
  const note = given === undefined ? undefined : `metadata.organisation_id "${given.slice(0, 64)}" names no organisation`;
  return { organisationId: found.by_subscription ?? found.by_customer ?? undefined, note };
}

export interface Link {
  /** Why a link was left as it was, for the ledger's reason. */
  note?: string;
  /** Unmatched events of this subscription or customer are stored: they can be applied now. */
  waiting: boolean;
}

/**
 * Ties the subscription and its customer to the organisation. The first link wins: a subscription or
 * customer already tied to another organisation is never moved, and an organisation that already has
 * a customer record keeps it. One statement, which also tells whether unmatched events wait for these
 * ids: under the advisory locks none can be added before commit, so when none wait now, none need
 * looking for after the event is applied.
 */
export async function linkSubscription(
  sql: Sql,
  organisationId: string,
  subscriptionId: string,
  customerId: string | undefined,
): Promise<Link> {
  const [row] = await sql<{ owner: string | null; customer_linked: boolean; waiting: boolean }>(
    `WITH subscription AS (
       INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id) VALUES ($1, $2, $3)
       ON CONFLICT (subscription_id) DO NOTHING
     ), owner AS (
       SELECT id FROM organisations WHERE provider_customer_id = $3
     ), customer AS (
       UPDATE organisations SET provider_customer_id = $3
       WHERE id = $2 AND provider_customer_id IS NULL AND $3 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM owner)
       RETURNING id
     )
     SELECT (SELECT id FROM owner) AS owner, EXISTS (SELECT 1 FROM customer) AS customer_linked,
       EXISTS (SELECT 1 FROM webhook_events
               WHERE status = 'unmatched' AND (customer_id = $3 OR subscription_id = $1)) AS waiting`,
    [subscriptionId, organisationId, customerId ?? null],
  );
  return { note: customerNote(row, organisationId, customerId), waiting: row.waiting };
}

function customerNote(
  row: { owner: string | null; customer_linked: boolean },
  organisationId: string,
  customerId: string | undefined,
): string | undefined {
  if (!customerId || row.customer_linked || row.owner === organisationId) return undefined;
  return row.owner
    ? `customer ${customerId} stays linked to another organisation`
    : `organisation keeps its existing customer record; ${customerId} not linked`;
}
