import parsePrometheusTextFormat from 'parse-prometheus-text-format';

import type { Config } from '../../shared/config/config.ts';
import { freePort } from '../../shared/embedded/freePort.ts';

/** Env that makes a context's worker serve its metrics, on a free port. */
export const workerMetricsEnv = async () => ({ METRICS_PORT: String(await freePort()) });

/** GET /metrics from the worker a context's config started. */
export const fetchWorkerMetrics = (config: Pick<Config, 'metricsPort'>) =>
  fetch(`http://127.0.0.1:${config.metricsPort}/metrics`);

export type Samples = { labels: Record<string, string>; value: number; count?: number }[];

/** The families of a Prometheus text exposition by name, each sample's value (a histogram's count) as a number. */
export function parseMetrics(text: string): Map<string, { type: string; samples: Samples }> {
  return new Map(
    parsePrometheusTextFormat(text).map((family) => [
      family.name,
      {
        type: family.type,
        samples: family.metrics.map((m) => ({
          labels: m.labels ?? {},
          value: Number(m.value ?? m.count),
          count: m.count === undefined ? undefined : Number(m.count),
        })),
      },
    ]),
  );
}

/** The value of the sample of `family` whose labels include `labels` (0 when there is none). */
export function sampleValue(
  families: ReturnType<typeof parseMetrics>,
  family: string,
  labels: Record<string, string> = {},
): number {
  const sample = families
    .get(family)
    ?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return sample?.value ?? 0;
}

/**
 * The `_count` of the histogram `family`'s series whose labels include `labels`, read from the text
 * itself (0 when there is none): parseMetrics's parser loses a histogram's labels when `le` comes
 * first, as prom-client writes it.
 */
export function histogramCount(text: string, family: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const match = line.match(new RegExp(`^${family}_count\\{(.*)\\} (\\S+)$`));
    if (!match) continue;
    const series = Object.fromEntries([...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => series[k] === v)) return Number(match[2]);
  }
  return 0;
}
