import { once } from 'node:events';

import { describe, expect, it } from '@jest/globals';

import { ProviderError } from '../../shared/providers/types.ts';
import { answerCut, callBounds } from '../../worker/providers/callBounds.ts';

const never = () => new AbortController().signal;

/** Runs `during` on fresh bounds and waits for them to cut the call; what cut it, and what that means. */
async function cutOf(
  limits: Parameters<typeof callBounds>[1],
  during: (heard: () => void) => void = () => {},
) {
  const bounds = callBounds(never(), limits);
  during(() => bounds.heard());
  await once(bounds.combined, 'abort');
  bounds.end();
  const cut = bounds.cut();
  let meaning: boolean | ProviderError;
  try {
    meaning = answerCut(cut, limits, 'mock /chat');
  } catch (error) {
    meaning = error as ProviderError;
  }
  return { cut, meaning };
}

describe('callBounds', () => {
  it('cuts a call that never sent a byte as the provider’s, whichever deadline fired first', async () => {
    for (const limits of [{ timeoutMs: 40, firstByteTimeoutMs: 40 }, { timeoutMs: 40 }]) {
      const { cut, meaning } = await cutOf(limits);
      expect(cut).toBe('firstByte');
      expect(meaning).toBeInstanceOf(ProviderError);
      expect((meaning as ProviderError).retryable).toBe(true);
      expect((meaning as ProviderError).message).toBe(
        'mock /chat timed out after 40 ms without a first byte',
      );
    }
  });

  it('cuts an answer that fell silent mid-answer as the provider’s stall', async () => {
    const { cut, meaning } = await cutOf({ timeoutMs: 10_000, firstByteTimeoutMs: 40 }, (heard) => heard());
    expect(cut).toBe('silence');
    expect((meaning as ProviderError).message).toBe('mock /chat timed out after 40 ms of silence mid-answer');
  });

  it('ends an answer still flowing at the whole deadline as the caller’s length, not a failure', async () => {
    // Heard from, and never silent long enough for the first-byte deadline before the whole one.
    const { cut, meaning } = await cutOf({ timeoutMs: 40, firstByteTimeoutMs: 10_000 }, (heard) => heard());
    expect(cut).toBe('deadline');
    expect(meaning).toBe(true);
  });

  it('leaves a cancellation by the job’s signal to the caller: no cut of its own', async () => {
    const job = new AbortController();
    const bounds = callBounds(job.signal, { timeoutMs: 10_000, firstByteTimeoutMs: 5000 });
    const aborted = once(bounds.combined, 'abort');
    job.abort(new Error('cancelled'));
    await aborted;
    bounds.end();
    expect(bounds.cut()).toBeUndefined();
    expect(answerCut(bounds.cut(), { timeoutMs: 10_000 }, 'mock /chat')).toBe(false);
  });
});
