import type { Registry } from 'prom-client';

import { taskQueues } from '../db/queries/queueStats.ts';
import type { Db } from '../db/sql.ts';
import type { Logger } from '../observability/logger.ts';
import { readingGauges, scrapeReading } from '../observability/scrapeReading.ts';
import { laneOfTask } from './lanes.ts';
import { byLane } from './queueStats.ts';

// Scrapes of every process within this window share one query: fleet-wide figures need no fresher.
const maxAgeMs = 5000;

/**
 * The fleet's queue as gauges (svc_jobs_queued{lane,task}, svc_job_queue_latency_seconds{lane},
 * svc_jobs_running{lane}), read from graphile-worker's tables by one query cached for at most 5 s,
 * so scraping any one process tells the state of the whole fleet. A failed read leaves the gauges
 * out of that scrape rather than failing it.
 */
export function registerQueueGauges(registry: Registry, db: Db, logger: Logger, now = Date.now): void {
  const gauge = readingGauges(
    registry,
    scrapeReading(() => taskQueues(db), {
      maxAgeMs,
      logger,
      failure: 'reading the queue for metrics failed',
      now,
    }),
  );
  gauge(
    'svc_jobs_queued',
    'Jobs due now that no worker holds, fleet-wide.',
    ['lane', 'task'],
    (set, rows) => {
      for (const row of rows) set({ lane: laneOfTask(row.task), task: row.task }, row.queued);
    },
  );
  const perLane = (name: string, help: string, value: (lane: ReturnType<typeof byLane>[number]) => number) =>
    gauge(name, help, ['lane'], (set, rows) => {
      for (const lane of byLane(rows)) set({ lane: lane.lane }, value(lane));
    });
  perLane(
    'svc_job_queue_latency_seconds',
    'Age of the oldest job due now and not yet taken (0 when none), fleet-wide: the signal to autoscale worker dynos on.',
    (lane) => lane.latencySeconds,
  );
  perLane('svc_jobs_running', 'Jobs a worker holds, fleet-wide.', (lane) => lane.running);
}
