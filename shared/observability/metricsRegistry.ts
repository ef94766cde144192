import {
  collectDefaultMetrics,
  type Histogram,
  type LabelValues,
  Registry,
  type RegistryContentType,
} from 'prom-client';

import { traceExemplar } from './exemplars.ts';

/**
 * A process's metrics registry: prom-client's default process metrics (event-loop lag, heap, GC,
 * CPU) and whatever the process adds. One per process (a registry of its own rather than the
 * library's global one, so two in one process, as tests build them, do not collide). With tracing
 * on it speaks OpenMetrics, the only text format with exemplars: histograms then carry the trace
 * of an observation (see observeTraced). Prometheus scrapes either.
 */
export function createMetricsRegistry(options: { exemplars?: boolean } = {}): Registry {
  const registry = new Registry();
  // The type's parameter would spread through every signature that takes a registry.
  if (options.exemplars === true) {
    (registry as Registry<RegistryContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  }
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Whether histograms in `registry` keep exemplars (`enableExemplars` when creating them). */
export function hasExemplars(registry: Registry): boolean {
  return (registry.contentType as string) === Registry.OPENMETRICS_CONTENT_TYPE;
}

/**
 * Observes `value`, with the active sampled span's trace and span ids as the bucket's exemplar when
 * `histogram` keeps exemplars (a histogram created with them takes only this form of observe).
 */
export function observeTraced<T extends string>(
  histogram: Histogram<T>,
  labels: LabelValues<T>,
  value: number,
): void {
  if (!(histogram as unknown as { enableExemplars: boolean }).enableExemplars) {
    histogram.observe(labels, value);
    return;
  }
  histogram.observe({ labels, value, exemplarLabels: (traceExemplar() ?? {}) as LabelValues<T> });
}
