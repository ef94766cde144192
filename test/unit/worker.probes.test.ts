import { describe, expect, it } from '@jest/globals';

import { createLogger } from '../../shared/observability/logger.ts';
import type { WorkerContext } from '../../worker/context.ts';
import { makeProbes } from '../../worker/probes.ts';

/** Timers that keep the process alive (an unref'd one, such as AbortSignal.timeout's, does not). */
const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** The database probe against a pool whose every query answers with `query`. */
function databaseProbe(query: () => Promise<unknown>) {
  const ctx = { pool: { query }, logger: createLogger('silent', 'test') } as unknown as WorkerContext;
  return (signal: AbortSignal) => makeProbes().get('database')!(ctx, signal);
}

/** Whether `promise` settles within a few turns of the event loop, with no timer having to fire. */
async function settlesWithoutTheClock(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.finally(() => (settled = true));
  for (let turn = 0; turn < 20 && !settled; turn++) await new Promise((r) => setImmediate(r));
  return settled;
}

describe('status probes', () => {
  it('leave no timer running once a probe has answered', async () => {
    const before = liveTimers();
    const probe = databaseProbe(async () => ({ rows: [] }));
    await expect(probe(new AbortController().signal)).resolves.toMatchObject({ state: 'operational' });
    expect(liveTimers()).toBe(before);
  });

  it('stop retrying at once when the worker stops, and report the outage', async () => {
    const stopping = new AbortController();
    let calls = 0;
    let failedOnce!: () => void;
    const firstFailure = new Promise<void>((resolve) => (failedOnce = resolve));
    const probe = databaseProbe(async () => {
      calls++;
      failedOnce();
      throw new Error('connection refused');
    });
    const result = probe(stopping.signal);
    await firstFailure;
    // One turn of the event loop: the probe has taken the failure and waits a second to try again.
    await new Promise((r) => setImmediate(r));
    stopping.abort();
    expect(await settlesWithoutTheClock(result)).toBe(true);
    await expect(result).resolves.toEqual({ state: 'outage', latencyMs: null });
    expect(calls).toBe(1);
  });
});
