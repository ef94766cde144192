import type { Registry } from 'prom-client';

import type { Db } from '../db/sql.ts';
import type { Logger } from '../observability/logger.ts';
import { readingGauges, scrapeReading } from '../observability/scrapeReading.ts';
import { CircuitBreaker, type CircuitStatus } from './circuitBreaker.ts';

const states: CircuitStatus['state'][] = ['closed', 'open', 'half-open'];

/**
 * The gateway's circuits as gauges, read from PostgreSQL at scrape time (one small query, cached
 * 2 s), so every process reports the state the whole fleet shares:
 * svc_provider_circuit_state{provider,state} is 1 for each provider's current state and 0 for the
 * others; svc_provider_circuit_failures{provider} counts its failures in a row.
 */
export function registerCircuitGauges(registry: Registry, db: Db, logger: Logger, providers: string[]): void {
  const breaker = new CircuitBreaker(db, () => ({ failures: 1, windowMs: 0, cooldownMs: 0, trialMs: 0 }));
  const gauge = readingGauges(
    registry,
    scrapeReading(() => breaker.status(providers), {
      maxAgeMs: 2000,
      logger,
      failure: 'reading provider circuits for metrics failed',
    }),
  );
  gauge(
    'svc_provider_circuit_state',
    "A model provider's circuit (1 for its current state): closed takes calls, open skips it, half-open lets one trial through.",
    ['provider', 'state'],
    (set, circuits) => {
      for (const c of circuits) {
        for (const state of states) set({ provider: c.name, state }, c.state === state ? 1 : 0);
      }
    },
  );
  gauge(
    'svc_provider_circuit_failures',
    "A model provider's retryable failures in a row within its breaker's window.",
    ['provider'],
    (set, circuits) => {
      for (const c of circuits) set({ provider: c.name }, c.failures);
    },
  );
}
