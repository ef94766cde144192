import { describe, expect, it } from '@jest/globals';

import { Batcher } from '../../shared/db/batcher.ts';

/** A statement stand-in that records each batch and answers when told to. */
function recordingRun() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const run = async (inputs: number[]) => {
    batches.push(inputs);
    await new Promise<void>((resolve) => gates.push(resolve));
    if (inputs.includes(13)) throw new Error('unlucky');
    return inputs.map((n) => n * 10);
  };
  const openAll = () => {
    for (const gate of gates.splice(0)) gate();
  };
  return { batches, run, openAll };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('Batcher (group commit)', () => {
  it('sends a lone call once the current turn of the event loop ends, alone', async () => {
    const r = recordingRun();
    const batcher = new Batcher(r.run, { maxInFlight: 1 });
    const one = batcher.submit(1);
    expect(r.batches).toEqual([]);
    await flush();
    expect(r.batches).toEqual([[1]]);
    r.openAll();
    await expect(one).resolves.toBe(10);
  });

  it('sends calls made in one turn together, as a worker starting a fetched batch of jobs makes them', async () => {
    const r = recordingRun();
    const batcher = new Batcher(r.run, { maxInFlight: 1 });
    const all = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    await flush();
    expect(r.batches).toEqual([[1, 2, 3, 4, 5]]);
    r.openAll();
    await expect(Promise.all(all)).resolves.toEqual([10, 20, 30, 40, 50]);
  });

  it('sends calls made while a batch is in flight together, each getting its own answer', async () => {
    const r = recordingRun();
    const batcher = new Batcher(r.run, { maxInFlight: 1 });
    const first = batcher.submit(1);
    await flush();
    const rest = [2, 3, 4, 5].map((n) => batcher.submit(n));
    await flush();
    expect(r.batches).toEqual([[1]]);
    r.openAll();
    await first;
    await flush();
    expect(r.batches).toEqual([[1], [2, 3, 4, 5]]);
    r.openAll();
    await expect(Promise.all(rest)).resolves.toEqual([20, 30, 40, 50]);
  });

  it('keeps up to maxInFlight batches running and caps their size', async () => {
    const r = recordingRun();
    const batcher = new Batcher(r.run, { maxInFlight: 2, maxBatch: 2 });
    const all = [1, 2, 3, 4, 5, 6, 7].map((n) => batcher.submit(n));
    await flush();
    // Two batches of two take the two slots; the rest wait for one.
    expect(r.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    r.openAll();
    await flush();
    expect(r.batches).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
      [7],
    ]);
    r.openAll();
    await expect(Promise.all(all)).resolves.toEqual([10, 20, 30, 40, 50, 60, 70]);
  });

  it('retries a failed batch one call at a time: only the bad call fails', async () => {
    const r = recordingRun();
    const batcher = new Batcher(r.run, { maxInFlight: 1 });
    const blocker = batcher.submit(1);
    await flush();
    const pending = [12, 13, 14].map((n) => batcher.submit(n).catch((e: Error) => e.message));
    await flush();
    r.openAll();
    await blocker;
    for (let i = 0; i < 5; i++) {
      await flush();
      r.openAll();
    }
    await expect(Promise.all(pending)).resolves.toEqual([120, 'unlucky', 140]);
    expect(r.batches).toEqual([[1], [12, 13, 14], [12], [13], [14]]);
  });
});
