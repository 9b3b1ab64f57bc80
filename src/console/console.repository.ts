import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The overview's figures, as read. */
export interface OverviewRows {
  organisations: number;
  byTier: { tier: string; count: number }[];
  byStatus: { status: string; count: number }[];
  /** Webhook events of the last 24 hours per hour (ISO hour start) and status. */
  eventsPerHour: { hour: string; status: string; count: number }[];
  notifications: { pending: number; failed: number };
}

/**
 * The console's reads across the modules' tables (spec §14): the only file with SQL for its pages. It only
 * reads; every change the console makes goes through the owning module's service.
 */
@Injectable()
export class ConsoleRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async overview(): Promise<OverviewRows> {
    const [[organisations], byTier, byStatus, eventsPerHour, [notifications]] = await Promise.all([
      this.db.query<{ count: number }[]>(`SELECT count(*)::int AS count FROM organisations`),
      // An organisation with a live paid subscription, by that subscription's tier (the newest, if several).
      this.db.query<{ tier: string; count: number }[]>(`
        SELECT tier, count(*)::int AS count FROM (
          SELECT DISTINCT ON (organisation_id) organisation_id, tier FROM provider_subscriptions
          WHERE status IN ('active', 'trialing', 'past_due') AND tier IS NOT NULL
          ORDER BY organisation_id, last_event_created DESC NULLS LAST) AS paid
        GROUP BY tier ORDER BY count DESC, tier`),
      this.db.query<{ status: string; count: number }[]>(`
        SELECT COALESCE(status, 'unknown') AS status, count(*)::int AS count FROM provider_subscriptions
        GROUP BY 1 ORDER BY count DESC, status`),
      this.db.query<{ hour: string; status: string; count: number }[]>(`
        SELECT to_char(date_trunc('hour', received_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00') AS hour, status, count(*)::int AS count
        FROM webhook_events WHERE received_at > now() - interval '24 hours'
        GROUP BY 1, 2`),
      this.db.query<{ pending: number; failed: number }[]>(`
        SELECT (SELECT count(*)::int FROM notification_deliveries WHERE status = 'pending') AS pending,
               (SELECT count(*)::int FROM notification_deliveries WHERE status = 'failed') AS failed`),
    ]);
    return { organisations: organisations.count, byTier, byStatus, eventsPerHour, notifications };
  }
}
