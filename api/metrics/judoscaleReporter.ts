import { hostname } from 'node:os';

import { taskQueues } from '../../shared/db/queries/queueStats.ts';
import type { Db } from '../../shared/db/sql.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { byLane } from '../../shared/queue/queueStats.ts';

/** One Judoscale metric: unix seconds, value, `qt` (queue time, ms) or `qd` (queue depth), queue. */
type JudoscaleMetric = [time: number, value: number, identifier: 'qt' | 'qd', queue: string];

/** The fleet's queue as Judoscale's job metrics, one queue per lane. */
export async function judoscaleMetrics(db: Db, now = Date.now()): Promise<JudoscaleMetric[]> {
  const time = Math.floor(now / 1000);
  return byLane(await taskQueues(db)).flatMap(({ lane, latencySeconds, queued }): JudoscaleMetric[] => [
    [time, Math.round(latencySeconds * 1000), 'qt', lane],
    [time, queued, 'qd', lane],
  ]);
}

/**
 * Posts the fleet's queue to Judoscale's adapter API (`<JUDOSCALE_URL>/v3/reports`) every
 * `intervalMs`, as its own adapters do, so Judoscale scales worker dynos on each lane's queue time
 * and wakes them from zero. Only one web dyno reports (`web.1` on Heroku, or any process off it):
 * the figures are the fleet's, the same from every process. A failed post is logged and the next
 * report goes out on time.
 */
export function startJudoscaleReporter(
  db: Db,
  logger: Pick<Logger, 'warn'>,
  options: { url: string; dyno: string | undefined; intervalMs?: number },
): { stop(): Promise<void> } {
  if (options.dyno !== undefined && options.dyno !== 'web.1') return { stop: async () => {} };
  const intervalMs = options.intervalMs ?? 10_000;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  const report = async () => {
    const body = {
      dyno: options.dyno ?? hostname(),
      pid: process.pid,
      config: {},
      adapters: { 'svc-platform': { adapter_version: '1' } },
      metrics: await judoscaleMetrics(db),
    };
    const res = await fetch(`${options.url}/v3/reports`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`Judoscale answered ${res.status}`);
  };
  const next = () => {
    // One report at a time: the next is scheduled once this one is over, however it ended.
    timer = setTimeout(() => {
      inFlight = report()
        .catch((error: unknown) => logger.warn({ err: error }, 'reporting the queue to Judoscale failed'))
        .finally(() => {
          if (!stopped) next();
        });
    }, intervalMs);
    timer.unref();
  };
  next();
  return {
    /** No report after this; resolves once the one under way, if any, is over (before the pool ends). */
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
