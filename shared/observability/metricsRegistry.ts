import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A process's metrics registry: prom-client's default process metrics (event-loop lag, heap, GC,
 * CPU) and whatever the process adds. One per process (a registry of its own rather than the
 * library's global one, so two in one process, as tests build them, do not collide).
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
