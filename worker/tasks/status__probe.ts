import type { Task } from 'graphile-worker';

import { insertStatusSample } from '../../shared/db/queries/statusSamples.ts';
import type { WorkerContext } from '../context.ts';
import type { Probe } from '../probes.ts';

/** Probes every status component once and records one sample each. */
export function statusProbe(ctx: WorkerContext, probes: ReadonlyMap<string, Probe>): Task {
  return async (_payload, helpers) => {
    // One at a time: a probe's latency must not include another probe's work on this event loop.
    for (const [component, probe] of probes) {
      const result = await probe(ctx, helpers.abortSignal);
      await insertStatusSample(ctx.pool, component, result.state, result.latencyMs);
    }
  };
}
