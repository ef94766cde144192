import type { WorkerEvents } from 'graphile-worker';
import type { Registry } from 'prom-client';
import type { DatabasePool } from 'slonik';

import type { Config } from '../../shared/config/config.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { createMetricsRegistry } from '../../shared/observability/metricsRegistry.ts';
import type { PoolConnections } from '../../shared/observability/poolGauge.ts';
import { registerPoolGauge } from '../../shared/observability/poolGauge.ts';
import { registerCircuitGauges } from '../../shared/providers/circuitGauges.ts';
import { registerQueueGauges } from '../../shared/queue/queueGauges.ts';
import { JobMetrics } from './jobMetrics.ts';
import { startMetricsServer } from './metricsServer.ts';
import { ProviderMetrics } from './providerMetrics.ts';

/**
 * A worker process's metrics: job attempts and its database pools (`pools`, read at collection).
 * Alone (a worker dyno) it has a registry of its own, with the fleet's queue gauges, served on
 * METRICS_PORT when that is set. Beside the api in one process (npm start) it adds its metrics to
 * the api's registry, which the api's GET /metrics serves.
 */
export async function workerMetrics(
  config: Pick<Config, 'metricsPort' | 'metricsToken' | 'providers' | 'tracing'>,
  shared: Registry | undefined,
  parts: { pool: DatabasePool; logger: Logger; events: WorkerEvents; pools: () => Iterable<PoolConnections> },
): Promise<{ registry: Registry; jobs: JobMetrics; providers: ProviderMetrics; close(): Promise<void> }> {
  const registry = shared ?? createMetricsRegistry({ exemplars: config.tracing });
  const jobs = new JobMetrics(registry, parts.events);
  const providers = new ProviderMetrics(registry);
  const unregisterPools = registerPoolGauge(registry, parts.pools);
  const done = { registry, jobs, providers, close: async () => unregisterPools() };
  if (shared) return done;
  registerQueueGauges(registry, parts.pool, parts.logger);
  registerCircuitGauges(registry, parts.pool, parts.logger, Object.keys(config.providers.providers));
  if (config.metricsPort === undefined) return done;
  const server = await startMetricsServer(registry, config.metricsPort, config.metricsToken, parts.logger);
  parts.logger.info({ port: config.metricsPort }, 'worker metrics listening');
  return {
    ...done,
    close: async () => {
      unregisterPools();
      await server.close();
    },
  };
}
