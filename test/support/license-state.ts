import { LicensingService } from '../../src/licensing/licensing.service';
import { TestApp } from './test-app';

/**
 * The organisation's license as the service derives it (tier and flags, from the status read), with the
 * state of the subscription last applied to it (a live one before a deleted one). Undefined when the
 * organisation has no subscription at all.
 */
export async function licenseOf(t: TestApp, organisationId: string) {
  const { license } = await t.app.get(LicensingService).status(t.db.manager, organisationId, null);
  const [subscription] = await t.db.query(
    `SELECT subscription_id, status AS subscription_status, current_period_start, current_period_end, past_due_since,
            last_event_created, last_event_rank, deleted_event_created IS NOT NULL AS deleted
     FROM provider_subscriptions WHERE organisation_id = $1
     ORDER BY deleted_event_created IS NULL DESC, last_event_created DESC NULLS LAST LIMIT 1`,
    [organisationId],
  );
  return subscription && { ...license, ...subscription };
}
