import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of this process, served at /metrics. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'API request latency',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  registers: [registry],
});

/** Waits of POSTs for their endpoint's share of a busy origin (src/core/fair-share.ts); POSTs that did not wait are not counted. */
export const originShareWaits = new Histogram({
  name: 'webhook_origin_share_wait_seconds',
  help: "Time a delivery POST waited for its endpoint's fair share of a busy origin's connections",
  buckets: [0.01, 0.05, 0.25, 1, 5, 15, 60],
  registers: [registry],
});

export const webhookSends = new Counter({
  name: 'webhook_sends_total',
  help: 'Signed webhook POSTs by outcome',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});
