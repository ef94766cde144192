import type { Task } from 'graphile-worker';

import { insertStatusSample } from '../../shared/db/queries/statusSamples.ts';
import type { WorkerContext } from '../context.ts';
import { probes } from '../probes.ts';

/** Probes every status component once and records one sample each. */
export function statusProbe(ctx: WorkerContext): Task {
  return async (_payload, helpers) => {
    const results = await Promise.all(
      [...probes].map(async ([component, probe]) => [component, await probe(ctx, helpers.abortSignal)] as const),
    );
    for (const [component, result] of results) {
      await insertStatusSample(ctx.pool, component, result.state, result.latencyMs);
    }
  };
}
