import { Gauge, type Registry } from 'prom-client';

import type { Logger } from './logger.ts';

/**
 * A fleet-wide reading for gauges, taken at scrape time and shared by every gauge and scrape within
 * `maxAgeMs` (one query, however many ask). A failed read is logged as `failure` and yields undefined,
 * so the gauges are left out of that scrape rather than failing it, and the next scrape reads again.
 */
export function scrapeReading<T>(
  read: () => Promise<T>,
  options: { maxAgeMs: number; logger: Logger; failure: string; now?: () => number },
): () => Promise<T | undefined> {
  const { maxAgeMs, logger, failure, now = Date.now } = options;
  let cached: { at: number; value: Promise<T | undefined> } | undefined;
  return () => {
    if (!cached || now() - cached.at >= maxAgeMs) {
      const value = read().catch((error: unknown) => {
        logger.warn({ err: error }, failure);
        cached = undefined;
        return undefined;
      });
      cached = { at: now(), value };
    }
    return cached.value;
  };
}

/**
 * Declares gauges set afresh from one scrape reading at each scrape: a gauge's `fill` sets its values
 * from the reading; a failed reading leaves the gauge empty.
 */
export function readingGauges<T>(registry: Registry, reading: () => Promise<T | undefined>) {
  return <Label extends string>(
    name: string,
    help: string,
    labelNames: readonly Label[],
    fill: (set: (labels: Record<Label, string>, value: number) => void, value: T) => void,
  ): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const value = await reading();
        this.reset();
        if (value !== undefined) fill((labels, figure) => this.set(labels, figure), value);
      },
    });
  };
}
