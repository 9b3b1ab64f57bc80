import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ProviderSubscriptions } from '../billing/provider-subscriptions.service';
import { FREE_TIER } from '../config/tiers';
import { preparedQuery } from '../database/prepared';

export interface SubscriptionChange {
  kind: 'created' | 'updated' | 'deleted';
  /** The event's `created` and rank (created 1 < updated 2 < deleted 3). */
  created: number;
  rank: number;
  subscriptionId: string;
  /** The subscription was deleted by an earlier event (it never comes back to life). */
  subscriptionDeleted: boolean;
  /** Resolved paid tier; unused for deletions (always free). */
  tier?: string;
  status: string | null;
  periodStart: number | null;
  periodEnd: number | null;
}

export type LicenseResult = { applied: true } | { applied: false; reason: string };

interface LicenseRow {
  subscription_id: string | null;
  last_event_created: number | null;
  last_event_rank: number | null;
}

/**
 * Applies a subscription event to the organisation's license row (the only writer of `licenses`), in
 * event order:
 * - the row is locked, so concurrent events for one organisation take turns (across instances);
 * - an event older than the last one applied (by created, then rank) changes nothing;
 * - a deleted subscription id never comes back: later created/updated events for it change nothing;
 * - a deletion is terminal, so it applies even when a newer event of that subscription was seen first;
 * - events of a subscription other than the license's current one do not override it, except a newer
 *   `.created` (a new subscription replaces the old) and `.updated` once the current one was deleted.
 * Runs in the caller's transaction.
 */
@Injectable()
export class LicenseWriter {
  constructor(private readonly subscriptions: ProviderSubscriptions) {}

  async applySubscriptionChange(manager: EntityManager, organisationId: string, change: SubscriptionChange): Promise<LicenseResult> {
    const license = await this.lock(manager, organisationId);
    if (change.kind !== 'deleted' && change.subscriptionDeleted) {
      return { applied: false, reason: `subscription ${change.subscriptionId} was deleted` };
    }
    const current = license.subscription_id;
    if (current !== null && current !== change.subscriptionId) {
      if (change.kind === 'deleted') return { applied: false, reason: "not the organisation's current subscription" };
      if (change.kind === 'updated' && !(await this.subscriptions.find(manager, current))?.deleted) {
        return { applied: false, reason: "not the organisation's current subscription" };
      }
    }
    const newer = isNewer(change, license);
    if (change.kind !== 'deleted' && !newer) {
      return { applied: false, reason: 'older than the last subscription event applied' };
    }

    const deleted = change.kind === 'deleted';
    await preparedQuery(
      manager,
      `UPDATE licenses SET tier = $2, subscription_id = $3, subscription_status = $4,
         current_period_start = $5, current_period_end = $6,
         last_event_created = CASE WHEN $7 THEN $8::bigint ELSE last_event_created END,
         last_event_rank = CASE WHEN $7 THEN $9::smallint ELSE last_event_rank END,
         updated_at = now()
       WHERE organisation_id = $1`,
      [
        organisationId,
        deleted ? FREE_TIER : change.tier,
        change.subscriptionId,
        deleted ? 'canceled' : change.status,
        // A deleted subscription leaves no paid period behind: the free tier counts calendar months.
        deleted ? null : change.periodStart,
        deleted ? null : change.periodEnd,
        newer,
        change.created,
        change.rank,
      ],
    );
    return { applied: true };
  }

  /**
   * Creates the license row if missing and locks it, in one statement: the no-op DO UPDATE locks the row
   * like SELECT … FOR UPDATE, also when another transaction created it meanwhile, and returns it.
   */
  private async lock(manager: EntityManager, organisationId: string): Promise<LicenseRow> {
    const [license] = await preparedQuery<LicenseRow>(
      manager,
      `INSERT INTO licenses (organisation_id) VALUES ($1)
       ON CONFLICT (organisation_id) DO UPDATE SET organisation_id = EXCLUDED.organisation_id
       RETURNING subscription_id, last_event_created, last_event_rank`,
      [organisationId],
    );
    return license;
  }
}

/** Equal (created, rank) counts as newer: a same-second redelivery under another id applies the same data. */
function isNewer(change: SubscriptionChange, license: LicenseRow): boolean {
  if (license.last_event_created === null) return true;
  if (change.created !== license.last_event_created) return change.created > license.last_event_created;
  return change.rank >= (license.last_event_rank ?? 0);
}
