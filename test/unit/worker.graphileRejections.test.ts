import { describe, expect, it } from '@jest/globals';

import { harmlessGraphileRejection } from '../../worker/graphileRejections.ts';

/** An error as it reaches the unhandled-rejection handler, thrown from `frame`. */
function thrownFrom(message: string, frame: string): Error {
  const error = new Error(message);
  error.stack = `Error: ${message}\n    at throwOnDoubleRelease (file:///app/node_modules/pg-pool/index.js:27:9)\n    at ${frame}`;
  return error;
}
const graphile = 'release (file:///app/node_modules/graphile-worker/dist/main.js:347:20)';
const ours = 'releaseLease (file:///app/worker/leases.ts:10:3)';

describe('graphile-worker rejections a worker process lives through', () => {
  it('lets go the LISTEN client released twice and the local queue that cannot hand its jobs back', () => {
    const doubleRelease = 'Release called on client which has already been released to the pool.';
    expect(harmlessGraphileRejection(thrownFrom(doubleRelease, graphile))).toMatch(/LISTEN client twice/);
    const lostReturn = 'Error occurred whilst returning jobs from local queue to database queue; aborting';
    expect(harmlessGraphileRejection(thrownFrom(lostReturn, graphile))).toMatch(/reaper releases them/);
  });

  it('lets nothing else go: the same words from our own code, other graphile-worker errors, non-errors', () => {
    const doubleRelease = 'Release called on client which has already been released to the pool.';
    expect(harmlessGraphileRejection(thrownFrom(doubleRelease, ours))).toBeUndefined();
    expect(harmlessGraphileRejection(thrownFrom('Failed to complete job', graphile))).toBeUndefined();
    expect(harmlessGraphileRejection(doubleRelease)).toBeUndefined();
    expect(harmlessGraphileRejection(undefined)).toBeUndefined();
  });
});
