import type { Registry } from 'prom-client';
import type { DatabasePool } from 'slonik';

import { slonikPoolConnections } from '../../shared/db/poolConnections.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { createMetricsRegistry } from '../../shared/observability/metricsRegistry.ts';
import { registerPoolGauge } from '../../shared/observability/poolGauge.ts';
import { registerCircuitGauges } from '../../shared/providers/circuitGauges.ts';
import { registerQueueGauges } from '../../shared/queue/queueGauges.ts';
import type { OpenStreams } from '../sse/openStreams.ts';
import { HttpMetrics, registerRequestLogGauge } from './httpMetrics.ts';
import { registerSseStreamGauge } from './sseStreamGauge.ts';

/**
 * A web process's metrics: its registry and the observer of answered calls, or nothing at all with
 * METRICS=off (no registry, no per-call observation, no GET /metrics). `exemplars` (tracing is on):
 * OpenMetrics with trace exemplars (see createMetricsRegistry).
 */
export function makeApiMetrics(
  enabled: boolean,
  options: { exemplars?: boolean } = {},
): { registry: Registry; observe: HttpMetrics['observe'] } | undefined {
  if (!enabled) return undefined;
  const registry = createMetricsRegistry(options);
  return { registry, observe: new HttpMetrics(registry).observe };
}

/** The gauges read at collection: request-log backlog, open streams, the api pool, the fleet's queue. */
export function registerApiGauges(
  registry: Registry,
  parts: {
    pool: DatabasePool;
    logger: Logger;
    requestLog: { readonly pending: number };
    openStreams: OpenStreams;
    /** The gateway's provider names, whose circuits are reported. */
    providers: string[];
  },
): void {
  registerRequestLogGauge(registry, parts.requestLog);
  registerSseStreamGauge(registry, parts.openStreams);
  registerPoolGauge(registry, () => [slonikPoolConnections('api', parts.pool)]);
  registerQueueGauges(registry, parts.pool, parts.logger);
  registerCircuitGauges(registry, parts.pool, parts.logger, parts.providers);
}
