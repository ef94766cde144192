/**
 * Rate-limit windows are calendar minutes: keeps a test's burst of calls from straddling one. Only
 * for api processes a test spawns (their clock cannot be set); in-process api instances take a clock
 * instead (setupTestContext's rateLimitClock), with no waiting.
 */
export async function awayFromMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8000) await new Promise((r) => setTimeout(r, left + 200));
}
