/** Rate-limit windows are calendar minutes: keeps a test's burst of calls from straddling one. */
export async function awayFromMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8000) await new Promise((r) => setTimeout(r, left + 200));
}
