import { describe, expect, it } from '@jest/globals';

import { perCall, perWindow, rootDecision } from '../../shared/observability/tracing/rootDecision.ts';

/** A deterministic stand-in for Math.random (a 32-bit LCG): the same draws on every run. */
function seeded(seed = 1) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** A clock the test moves by hand. */
function manualClock(start = 0) {
  const clock = { now: start, read: () => clock.now };
  return clock;
}

/** perWindow on a clock set to each of `times` in turn, its draws taken from `draws`: the decisions. */
function decisionsAt(share: number, windowMs: number, draws: number[]) {
  const clock = manualClock();
  const decide = perWindow(share, windowMs, clock.read, () => draws.shift()!);
  return (times: number[]) => times.map((ms) => ((clock.now = ms), decide()));
}

describe('perWindow', () => {
  it('samples every call in its period’s window, placed where the draw says, and none outside', () => {
    // One in twenty, 50 ms windows: a period of 1000 ms; a draw of 0.5 puts the window at 500–550.
    // The first draw is for the period before (its window, at 0.5, ends at -450: nothing carried).
    const at = decisionsAt(0.05, 50, [0.5, 0.5, 0.5, 0.5, 0.5]);
    expect(at([0, 499.9, 500, 549.9, 550, 999.9])).toEqual([false, false, true, true, false, false]);
    // The next period draws again, and a clock that skipped periods lands in its own.
    expect(at([1499.9, 1500, 7_500, 7_550])).toEqual([false, true, true, false]);
  });

  it('lets a window drawn late in its period run on into the next one', () => {
    // Period 0's window is 980–1030; period 1 (window 1500–1550) still samples its first 30 ms.
    const at = decisionsAt(0.05, 50, [0, 0.98, 0.5]);
    expect(at([979, 980, 1000, 1029.9, 1030, 1500])).toEqual([false, true, true, true, false, true]);
  });

  it('knows a period follows the one before even where their ends, as floats, do not meet', () => {
    // 50 ms at 0.03: periods of 1666.67 ms, and 6 × p + p is not 7 × p in floating point.
    const p = 50 / 0.03;
    // Period 6's window opens 1.67 ms before period 7 and runs on 48.3 ms into it.
    const at = decisionsAt(0.03, 50, [0, 0.999, 0.5]);
    expect(at([6 * p + 1666, 7 * p + 10, 7 * p + 48, 7 * p + 49])).toEqual([true, true, true, false]);
  });

  it('keeps its share of evenly spread calls, in runs a window long', () => {
    const clock = manualClock();
    const decide = perWindow(0.05, 50, clock.read, seeded(7));
    const runs: number[] = [];
    let previous = false;
    // A call every millisecond for 1000 periods: a 50 ms window holds exactly 50 of them.
    for (let ms = 0; ms < 1_000_000; ms++) {
      clock.now = ms;
      const now = decide();
      if (now && !previous) runs.push(0);
      if (now) runs[runs.length - 1]!++;
      previous = now;
    }
    const sampled = runs.reduce((a, b) => a + b, 0);
    // Off by the windows at either end, partly outside the million milliseconds, and by the rare
    // overlap of a carried window and the next (counted once).
    expect(Math.abs(sampled - 50_000)).toBeLessThanOrEqual(250);
    // Two windows in a row may touch or overlap (one carried, one drawn early): a longer run.
    const windowLong = runs.filter((n) => n === 50).length;
    expect(windowLong).toBeGreaterThan(0.9 * runs.length);
    expect(runs.every((n) => n <= 100)).toBe(true);
  });

  it('samples every moment of a period alike', () => {
    const clock = manualClock();
    const decide = perWindow(0.1, 100, clock.read, seeded(3));
    const sampledAtOffset = new Array<number>(10).fill(0);
    for (let ms = 0; ms < 2_000_000; ms += 10) {
      clock.now = ms;
      if (decide()) sampledAtOffset[Math.floor((ms % 1000) / 100)]!++;
    }
    // 2000 periods, each sampling 10 of its 100 calls: each tenth of the period about 2000 of them,
    // its first tenth too (a window placed only within its period would give the ends half of it).
    for (const count of sampledAtOffset) {
      expect(count).toBeGreaterThan(0.85 * 2000);
      expect(count).toBeLessThan(1.15 * 2000);
    }
  });

  it('samples everything at ratio 1 and nothing at 0, whatever the window', () => {
    const clock = manualClock();
    const all = perWindow(1, 50, clock.read);
    const none = perWindow(0, 50, clock.read);
    for (let ms = 0; ms < 5000; ms += 7) {
      clock.now = ms;
      expect([all(), none()]).toEqual([true, false]);
    }
  });
});

describe('perCall', () => {
  it('judges each call alone', () => {
    const draws = [0.01, 0.5, 0.049, 0.05];
    const decide = perCall(0.05, () => draws.shift()!);
    expect([decide(), decide(), decide(), decide()]).toEqual([true, false, true, false]);
    expect(perCall(1, () => 0.999)()).toBe(true);
    expect(perCall(0, () => 0)()).toBe(false);
  });
});

describe('rootDecision', () => {
  it('is per call unless a window is configured, and left to the SDK for samplers that are not parent-based', () => {
    expect(rootDecision({ name: 'traceidratio', ratio: 0.05 })).toBeUndefined();
    expect(rootDecision({ name: 'always_on', ratio: 1 })).toBeUndefined();
    expect(rootDecision({ name: 'parentbased_always_off', ratio: 1 })!()).toBe(false);
    expect(rootDecision({ name: 'parentbased_always_on', ratio: 1 })!()).toBe(true);
    // A ratio per window: consecutive calls a microsecond apart share their window's decision.
    const decide = rootDecision({ name: 'parentbased_traceidratio', ratio: 0.5, windowMs: 60_000 })!;
    const first = decide();
    for (let i = 0; i < 100; i++) expect(decide()).toBe(first);
  });
});
