/*
 * The entitlement_overrides table as SQL fragments, for the statements of other repositories that read it
 * inside their own statement: the license state (licensing.repository.ts) and notifications' expiry sweep.
 * Its writes are in overrides.repository.ts.
 */

/** The live overrides of `organisation` (not expired at now()): name, value (jsonb), expires_at, note, created_at. */
export const liveOverridesSql = (organisation: string) => `
  SELECT name, value, expires_at, note, created_at FROM entitlement_overrides
  WHERE organisation_id = ${organisation} AND (expires_at IS NULL OR expires_at > now())`;

/**
 * The organisations with an override that expired after `since(organisation)` (an SQL expression of the
 * column `organisation_id`, e.g. when it was last compared; NULL: never), at most 1000.
 */
export const expiredOverridesSql = (since: (organisation: string) => string) => `
  SELECT DISTINCT o.organisation_id FROM entitlement_overrides o
  WHERE o.expires_at <= now() AND (${since('o.organisation_id')} IS NULL OR o.expires_at > ${since('o.organisation_id')})
  LIMIT 1000`;
