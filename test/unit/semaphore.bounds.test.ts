import { describe, expect, it } from '@jest/globals';

import { Semaphore } from '../../shared/primitives/semaphore.ts';

/** A unit of work the test ends by hand, recording how many ran at once. */
function gatedWork(log: { running: number; peak: number; started: number[] }) {
  const ends: (() => void)[] = [];
  const fails: ((error: Error) => void)[] = [];
  const work = (id: number) => () =>
    new Promise<number>((resolve, reject) => {
      log.running += 1;
      log.peak = Math.max(log.peak, log.running);
      log.started.push(id);
      ends[id] = () => {
        log.running -= 1;
        resolve(id);
      };
      fails[id] = (error) => {
        log.running -= 1;
        reject(error);
      };
    });
  return { work, end: (id: number) => ends[id]!(), fail: (id: number, e: Error) => fails[id]!(e) };
}

describe('Semaphore', () => {
  it('runs at most its permits at once, lines up as many more, and refuses the rest unrun', async () => {
    const semaphore = new Semaphore(2, 2);
    const log = { running: 0, peak: 0, started: [] as number[] };
    const { work, end } = gatedWork(log);
    const runs = [0, 1, 2, 3, 4, 5].map((id) => semaphore.run(work(id)));
    expect(runs.map((r) => r === null)).toEqual([false, false, false, false, true, true]);
    expect(log.started).toEqual([0, 1]);
    end(0);
    await expect(runs[0]).resolves.toBe(0);
    // The freed permit went to the first in line; the line has room again.
    expect(log.started).toEqual([0, 1, 2]);
    expect(semaphore.run(work(6))).not.toBeNull();
    expect(semaphore.run(work(7))).toBeNull();
    end(1);
    end(2);
    await Promise.all([runs[1], runs[2]]);
    expect(log.started).toEqual([0, 1, 2, 3, 6]);
    end(3);
    end(6);
    expect(log.peak).toBe(2);
  });

  it('gives the permit back when the work rejects or throws', async () => {
    const semaphore = new Semaphore(1, 0);
    const log = { running: 0, peak: 0, started: [] as number[] };
    const { work, fail, end } = gatedWork(log);
    const failing = semaphore.run(work(0));
    expect(semaphore.run(work(1))).toBeNull();
    fail(0, new Error('hash failed'));
    await expect(failing).rejects.toThrow('hash failed');
    const throwing = semaphore.run(() => {
      throw new Error('thrown before any await');
    });
    await expect(throwing).rejects.toThrow('thrown before any await');
    const next = semaphore.run(work(2));
    expect(next).not.toBeNull();
    end(2);
    await expect(next).resolves.toBe(2);
  });
});
