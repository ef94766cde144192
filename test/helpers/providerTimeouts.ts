import { expect } from '@jest/globals';

import { ProviderError } from '../../shared/providers/types.ts';
import { thrown } from './thrown.ts';

/** Awaits a provider call that should run out of time: a retryable ProviderError whose message matches. */
export async function expectTimedOut(call: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await thrown(call);
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).retryable).toBe(true);
  expect((error as Error).message).toMatch(message);
}
