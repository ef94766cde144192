import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import type { RequestLogEntry } from '../../shared/db/queries/requestLogs.ts';

/**
 * Calls per operation, from the request log's entries (one per answered call, REST or MCP tool
 * call alike): svc_http_requests_total{operation,status_class} and
 * svc_http_request_duration_seconds{operation}. A path that names no operation counts as `unmatched`.
 */
export class HttpMetrics {
  private readonly requests: Counter<'operation' | 'status_class'>;
  private readonly duration: Histogram<'operation'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'svc_http_requests_total',
      help: 'Answered API calls (REST and MCP tool calls) by OpenAPI operation id and status class.',
      labelNames: ['operation', 'status_class'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from a call arriving to its answer, by OpenAPI operation id.',
      labelNames: ['operation'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    });
  }

  readonly observe = (entry: RequestLogEntry): void => {
    const operation = entry.operation ?? 'unmatched';
    this.requests.inc({ operation, status_class: `${Math.floor(entry.status / 100)}xx` });
    this.duration.observe({ operation }, entry.latency_ms / 1000);
  };
}

/** svc_request_log_pending: request-log entries waiting for the batched write. */
export function registerRequestLogGauge(registry: Registry, log: { readonly pending: number }): void {
  new Gauge({
    name: 'svc_request_log_pending',
    help: 'Request-log entries waiting for the batched write.',
    registers: [registry],
    collect() {
      this.set(log.pending);
    },
  });
}
