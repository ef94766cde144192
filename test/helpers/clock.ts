import { jest } from '@jest/globals';

/**
 * Rate-limit windows are calendar minutes: keeps a test's burst of calls from straddling one. Only
 * for api processes a test spawns (their clock cannot be set); in-process api instances take a clock
 * instead (setupTestContext's rateLimitClock), with no waiting.
 */
export async function awayFromMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8000) await new Promise((r) => setTimeout(r, left + 200));
}

type FakeTimersConfig = Extract<
  NonNullable<Parameters<typeof jest.useFakeTimers>[0]>,
  { doNotFake?: unknown }
>;
/** Every fake-able clock but Date: timers, ticks and performance stay real. */
const realTimers: FakeTimersConfig['doNotFake'] = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
];

/**
 * Runs `fn` with this process's Date moved to `at`, timers left real, so connections and requests
 * run as usual: for what an in-process api decides by the time of day (when a secret ends), without
 * waiting for it on a machine whose load makes any short wait a race.
 */
export async function atTime<T>(at: number, fn: () => Promise<T>): Promise<T> {
  jest.useFakeTimers({ doNotFake: realTimers, now: at });
  try {
    return await fn();
  } finally {
    jest.useRealTimers();
  }
}
