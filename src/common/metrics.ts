import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics, in one registry served at /metrics. Modules import the metric they
 * record (e.g. `webhookEvents.inc({ type, outcome })`); nothing else needs wiring.
 */
export const registry = new Registry();

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request durations by route pattern, method and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const webhookEvents = new Counter({
  name: 'webhook_events_total',
  help: 'Webhook events received, by event type and outcome (processed, duplicate, stale, unmatched, ignored, failed, rejected)',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const providerSyncRuns = new Counter({
  name: 'provider_sync_runs_total',
  help: 'Reconciliation runs with the payment provider, by outcome (ok, failed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const providerSyncChanges = new Counter({
  name: 'provider_sync_changes_total',
  help: 'What reconciliation runs changed: events applied that no webhook had delivered, subscriptions corrected',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const providerCalls = new Histogram({
  name: 'payment_provider_call_duration_seconds',
  help: 'Calls to the payment provider (including the wait for a slot in PAYPROVIDER_MAX_RPS), by operation and outcome (ok, not_found, rejected, unavailable, rate_limited)',
  labelNames: ['operation', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [registry],
});

export const notificationDeliveries = new Counter({
  name: 'notification_deliveries_total',
  help: 'Attempts to deliver outbound notifications, by outcome (delivered, failed_attempt: retried later, gave_up: failed after 24 h)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const jobQueueRestarts = new Counter({
  name: 'job_queue_restarts_total',
  help: 'Times the notifications job queue stopped on an error (e.g. the database lost mid-job) and was started again',
  registers: [registry],
});

/** Pools of the live DataSources (one in production; tests run several apps in one process). */
const pools = new Set<PoolCounts>();

/** The counters node-postgres keeps on its Pool. */
export interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

const poolGauge = (name: string, help: string, read: (pool: PoolCounts) => number) =>
  new Gauge({
    name,
    help,
    registers: [registry],
    // Read at scrape time: nothing runs between scrapes.
    collect() {
      let sum = 0;
      for (const pool of pools) sum += read(pool);
      this.set(sum);
    },
  });

poolGauge('database_pool_connections', 'Open connections in the database pool', (p) => p.totalCount);
poolGauge('database_pool_idle_connections', 'Idle connections in the database pool', (p) => p.idleCount);
poolGauge('database_pool_waiting_clients', 'Queries waiting for a free pool connection', (p) => p.waitingCount);

/** Reports a pool in the gauges above until the returned function is called. */
export function trackPool(pool: PoolCounts): () => void {
  pools.add(pool);
  return () => void pools.delete(pool);
}

/** The outbox backlog of each live app (one in production), read at scrape time. */
export interface NotificationBacklog {
  pending: number;
  /** Age of the oldest message with a delivery still pending, in seconds (0: none). */
  oldestPendingAgeS: number;
}
const backlogReaders = new Set<() => Promise<NotificationBacklog>>();

/** Reports an app's outbox in the gauges below until the returned function is called. */
export function trackNotificationBacklog(read: () => Promise<NotificationBacklog>): () => void {
  backlogReaders.add(read);
  return () => void backlogReaders.delete(read);
}

// One read of each app's backlog per scrape, shared by the two gauges below.
let backlogRead: Promise<NotificationBacklog[]> | undefined;
function backlogs(): Promise<NotificationBacklog[]> {
  backlogRead ??= Promise.all([...backlogReaders].map((read) => read().catch(() => ({ pending: 0, oldestPendingAgeS: 0 })))).finally(
    () => (backlogRead = undefined),
  );
  return backlogRead;
}

// Registered after the pool gauges on purpose: a scrape reads the pools before its own backlog query
// takes a connection, so database_pool_waiting_clients never counts the scrape itself.
const backlogGauge = (name: string, help: string, pick: (b: NotificationBacklog) => number, combine: (a: number, b: number) => number) =>
  new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      this.set((await backlogs()).map(pick).reduce(combine, 0));
    },
  });

backlogGauge('notification_deliveries_pending', 'Outbound notification deliveries not yet delivered nor given up', (b) => b.pending, (a, b) => a + b);
backlogGauge(
  'notification_oldest_pending_age_seconds',
  'Age of the oldest outbound notification still waiting for a delivery',
  (b) => b.oldestPendingAgeS,
  Math.max,
);

export const meterEvents = new Counter({
  name: 'meter_events_total',
  help: 'Attempts to deliver provider meter events (one per window), by outcome (delivered, duplicate: the provider already had it, retried, failed: refused for good)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** The meter windows not yet delivered, of each live app (one in production), read at scrape time. */
const meterWindowReaders = new Set<() => Promise<{ open: number; pending: number }>>();

export function trackMeterWindows(read: () => Promise<{ open: number; pending: number }>): () => void {
  meterWindowReaders.add(read);
  return () => void meterWindowReaders.delete(read);
}

new Gauge({
  name: 'meter_windows_pending',
  help: 'Meter windows not yet delivered to the provider, by state (open: still summing; pending: closed, waiting for delivery)',
  labelNames: ['state'] as const,
  registers: [registry],
  async collect() {
    const counts = await Promise.all([...meterWindowReaders].map((read) => read().catch(() => ({ open: 0, pending: 0 }))));
    this.set({ state: 'open' }, counts.reduce((n, c) => n + c.open, 0));
    this.set({ state: 'pending' }, counts.reduce((n, c) => n + c.pending, 0));
  },
});

let defaultMetricsEnabled = false;

/** Process metrics (CPU, memory, event loop, GC). Once per process: registering twice throws. */
export function enableDefaultMetrics(): void {
  if (defaultMetricsEnabled) return;
  defaultMetricsEnabled = true;
  collectDefaultMetrics({ register: registry });
}
