/**
 * Billing's subscriptions as SQL fragments, for other modules' one-round-trip statements (the status read
 * and the usage write derive the license from them inside their own statement). The SQL on
 * provider_subscriptions stays here, with its owner.
 */
export const subscriptionSql = {
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
