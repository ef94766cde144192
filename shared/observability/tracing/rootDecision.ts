import { edgeShare, type TracesSampler } from '../../config/tracesSampler.ts';

/** Whether a call that starts a trace at the api (no trusted parent) is sampled. */
export type RootDecision = () => boolean;

/** Each call on its own: `share` of them, scattered among the rest (the specification's ratio). */
export function perCall(share: number, random: () => number = Math.random): RootDecision {
  if (share >= 1) return () => true;
  if (share <= 0) return () => false;
  return () => random() < share;
}

/**
 * Every call of one window `windowMs` long in each period of `windowMs / share`, the window starting
 * anywhere in its period (it may run on into the next), so every moment is as likely as any other
 * to be sampled, a process's windows follow no rhythm a periodic load could fall in or out of step
 * with, and a fleet's processes cover different moments. The same share of time, and of calls under
 * steady load, as perCall; what differs is that sampled calls come together. Scattered one in
 * twenty, each sampled call ran between unsampled ones on cold caches and cost GET /me 2–4 % of its
 * throughput; the same calls together cost nothing measurable (docs/tracing-cost.md). `clock` is
 * monotonic milliseconds.
 */
export function perWindow(
  share: number,
  windowMs: number,
  clock: () => number = () => performance.now(),
  random: () => number = Math.random,
): RootDecision {
  if (share >= 1) return () => true;
  if (share <= 0) return () => false;
  const period = windowMs / share;
  // Periods are counted by index: comparing their ends as floats could miss that one follows another.
  let index = -Infinity;
  let periodEnd = -Infinity;
  let windowStart = 0;
  let windowEnd = 0;
  // Where the window of the period before this one ends, if it runs on into this one.
  let carriedEnd = -Infinity;
  return () => {
    const now = clock();
    if (now >= periodEnd) {
      const next = Math.floor(now / period);
      const periodStart = next * period;
      // The period before passed without a call if it is not the one that just ended: its window,
      // never drawn, is drawn now (draws are independent, so when makes no difference).
      carriedEnd = next === index + 1 ? windowEnd : periodStart - period + random() * period + windowMs;
      index = next;
      periodEnd = periodStart + period;
      windowStart = periodStart + random() * period;
      windowEnd = windowStart + windowMs;
    }
    return now < carriedEnd || (now >= windowStart && now < windowEnd);
  };
}

/**
 * The api's root decision for the configured sampler: per window where TRACE_SAMPLING_WINDOW_MS is
 * set (parentbased_traceidratio only), else per call; undefined for the samplers that are not
 * parent-based, which judge every span in the SDK.
 */
export function rootDecision(sampler: TracesSampler): RootDecision | undefined {
  const share = edgeShare(sampler);
  if (share === undefined) return undefined;
  return sampler.windowMs === undefined ? perCall(share) : perWindow(share, sampler.windowMs);
}
