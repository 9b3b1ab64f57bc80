import { Counter, Histogram, Registry } from 'prom-client';

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

export const providerCalls = new Histogram({
  name: 'payment_provider_call_duration_seconds',
  help: 'Calls to the payment provider, by operation and outcome (ok, not_found, rejected, unavailable)',
  labelNames: ['operation', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [registry],
});
