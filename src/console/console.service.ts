import { Injectable } from '@nestjs/common';
import { ConsoleRepository, OverviewRows } from './console.repository';

export interface HourlyChart {
  /** `HH:00` (UTC) of each of the last 24 hours, oldest first. */
  hours: string[];
  series: { label: string; data: number[] }[];
}

export interface Overview {
  organisations: number;
  byTier: { tier: string; count: number }[];
  byStatus: { status: string; count: number }[];
  events: number;
  failed: number;
  unmatched: number;
  pendingNotifications: number;
  failedNotifications: number;
  chart: HourlyChart;
}

// The chart's series: the outcomes an operator acts on, the rest together.
const SERIES: { label: string; statuses: string[] }[] = [
  { label: 'processed', statuses: ['processed'] },
  { label: 'failed', statuses: ['failed'] },
  { label: 'unmatched', statuses: ['unmatched'] },
  { label: 'other (duplicate, stale, ignored)', statuses: ['duplicate', 'stale', 'ignored'] },
];

/** What the console's pages show, shaped from the console repository's reads. */
@Injectable()
export class ConsoleService {
  constructor(private readonly repository: ConsoleRepository) {}

  async overview(now = new Date()): Promise<Overview> {
    const rows = await this.repository.overview();
    const total = (statuses: string[]) => rows.eventsPerHour.filter((r) => statuses.includes(r.status)).reduce((sum, r) => sum + r.count, 0);
    return {
      organisations: rows.organisations,
      byTier: rows.byTier,
      byStatus: rows.byStatus,
      events: total(SERIES.flatMap((s) => s.statuses)),
      failed: total(['failed']),
      unmatched: total(['unmatched']),
      pendingNotifications: rows.notifications.pending,
      failedNotifications: rows.notifications.failed,
      chart: hourlyChart(rows.eventsPerHour, now),
    };
  }
}

function hourlyChart(rows: OverviewRows['eventsPerHour'], now: Date): HourlyChart {
  const hours = Array.from({ length: 24 }, (_, i) => new Date(now.getTime() - (23 - i) * 3_600_000).toISOString().slice(0, 13) + ':00');
  return {
    hours: hours.map((hour) => hour.slice(11)),
    series: SERIES.map(({ label, statuses }) => ({
      label,
      data: hours.map((hour) => rows.filter((r) => r.hour === hour && statuses.includes(r.status)).reduce((sum, r) => sum + r.count, 0)),
    })),
  };
}
