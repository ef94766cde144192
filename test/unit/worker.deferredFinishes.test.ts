import { describe, expect, it } from '@jest/globals';

import type { UnbilledOutcome } from '../../shared/db/queries/jobs.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import { DeferredFinishes } from '../../worker/deferredFinishes.ts';

const logger = createLogger('silent', 'test');

const outcome = (jobId: string): UnbilledOutcome => ({
  jobId,
  status: 'succeeded',
  result: { text: jobId },
  meteringId: `mtr_${jobId}`,
  usage: {},
});

/** A finish statement stand-in that holds every write until told to answer. */
function heldWrites() {
  const waiting: { jobId: string; answer: () => void }[] = [];
  const write = (o: UnbilledOutcome) =>
    new Promise<boolean>((resolve) => waiting.push({ jobId: o.jobId, answer: () => resolve(true) }));
  const answerFirst = () => waiting.shift()!.answer();
  return { waiting, write, answerFirst };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('DeferredFinishes', () => {
  it('lets a job go at once while the finishes waiting stay under the bound, then makes it wait for room', async () => {
    const writes = heldWrites();
    const finishes = new DeferredFinishes(writes.write, logger, { maxPending: 2 });
    const cleaned: string[] = [];
    const after = (jobId: string) => async () => void cleaned.push(jobId);
    await finishes.add(outcome('a'), after('a'));
    await finishes.add(outcome('b'), after('b'));
    let thirdLetGo = false;
    const third = finishes.add(outcome('c'), after('c')).then(() => (thirdLetGo = true));
    await turn();
    expect(writes.waiting.map((w) => w.jobId)).toEqual(['a', 'b', 'c']);
    expect(thirdLetGo).toBe(false);
    writes.answerFirst();
    await third;
    expect(cleaned).toEqual(['a']);
    const drained = finishes.drain();
    writes.answerFirst();
    writes.answerFirst();
    await drained;
    expect(cleaned.sort()).toEqual(['a', 'b', 'c']);
  });

  it('retries a failed write with the same outcome, and cleans up only after one landed', async () => {
    const seen: UnbilledOutcome[] = [];
    let failures = 2;
    const finishes = new DeferredFinishes(
      async (o) => {
        seen.push(o);
        if (failures-- > 0) throw new Error('connection reset');
        return true;
      },
      logger,
      { retryDelaysMs: [0, 0, 0] },
    );
    let cleaned = 0;
    await finishes.add(outcome('a'), async () => void cleaned++);
    await finishes.drain();
    expect(seen).toEqual([outcome('a'), outcome('a'), outcome('a')]);
    expect(cleaned).toBe(1);
  });

  it('gives up after its retries, without clean-up, and drain still ends', async () => {
    let writes = 0;
    const finishes = new DeferredFinishes(
      async () => {
        writes++;
        throw new Error('database unavailable');
      },
      logger,
      { retryDelaysMs: [0, 0] },
    );
    let cleaned = 0;
    await finishes.add(outcome('a'), async () => void cleaned++);
    await finishes.drain();
    expect(writes).toBe(3);
    expect(cleaned).toBe(0);
  });
});
