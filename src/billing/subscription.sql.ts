/** New values of a subscription event, as SQL expressions (parameters or EXCLUDED columns). */
export interface SubscriptionValues {
  tier: string;
  status: string;
  periodStart: string;
  periodEnd: string;
  /** The event's `created` and rank (created 1 < updated 2 < deleted 3), and whether it is a deletion. */
  created: string;
  rank: string;
  deleted: string;
}

/**
 * What an applied event changes on a stored subscription (`s`), given its values `v`. `past_due_since` is
 * the `created` of the first event showing past_due after another status: later retries do not restart
 * grace. Shared by `ProviderSubscriptions.apply`'s upsert and the webhook's one-statement path.
 */
export function appliedEventSet(v: SubscriptionValues): string {
  return `tier = COALESCE(${v.tier}, s.tier), status = ${v.status},
    current_period_start = ${v.periodStart}, current_period_end = ${v.periodEnd},
    past_due_since = CASE WHEN ${v.status} = 'past_due'
                          THEN CASE WHEN s.status = 'past_due' AND s.past_due_since IS NOT NULL THEN s.past_due_since ELSE ${v.created} END END,
    last_event_created = GREATEST(s.last_event_created, ${v.created}),
    last_event_rank = CASE WHEN ${v.created} >= s.last_event_created OR s.last_event_created IS NULL
                           THEN ${v.rank} ELSE s.last_event_rank END,
    deleted_event_created = CASE WHEN ${v.deleted} THEN ${v.created} END, updated_at = now()`;
}

/**
 * Billing's subscriptions as SQL fragments, for other modules' one-round-trip statements (the status read
 * and the usage write derive the license from them inside their own statement; the webhook applies an
 * event's common case with its ledger row in one statement). The SQL on provider_subscriptions stays
 * here, with its owner.
 */
export const subscriptionSql = {
  /** The organisation a stored subscription is tied to (deleted or not): zero or one row, `organisation_id`. */
  organisationOf: (subscriptionId: string) => `SELECT organisation_id FROM provider_subscriptions WHERE subscription_id = ${subscriptionId}`,

  /**
   * `ProviderSubscriptions.apply` as one UPDATE, for a stored subscription only, and only where it would
   * apply the event (not `stale`, not a `tie`): answers `organisation_id` when it applied it, nothing else
   * (the caller then takes the general path). `condition` (over `s`) must hold as well.
   * Columns: organisation_id.
   */
  applyInOrder: (subscriptionId: string, kind: string, v: SubscriptionValues, condition: string) => `
    UPDATE provider_subscriptions s SET ${appliedEventSet(v)}
    WHERE s.subscription_id = ${subscriptionId} AND s.deleted_event_created IS NULL
      AND (${kind} = 'deleted' OR s.last_event_created IS NULL OR ${v.created} > s.last_event_created
           OR (${v.created} = s.last_event_created
               AND (${v.rank} > COALESCE(s.last_event_rank, 0) OR (${v.rank} = COALESCE(s.last_event_rank, 0) AND ${kind} <> 'updated'))))
      AND ${condition}
    RETURNING s.organisation_id`,

  /**
   * The subscriptions that can shape the organisation's license: not deleted, with a tier, and past
   * `incomplete` (a first payment still pending grants nothing yet). Columns: tier, status,
   * period_start, period_end, past_due_since, last_event_created.
   */
  licenseCandidates: (organisationId: string) => `
    SELECT tier, status, current_period_start AS period_start, current_period_end AS period_end, past_due_since,
           last_event_created
    FROM provider_subscriptions
    WHERE organisation_id = ${organisationId} AND deleted_event_created IS NULL
      AND tier IS NOT NULL AND status IS NOT NULL AND status <> 'incomplete'`,
};
