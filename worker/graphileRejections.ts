import type { Logger } from '../shared/observability/logger.ts';

/**
 * Rejections graphile-worker 0.18 leaves unhandled when PostgreSQL goes away under it, each harmless:
 * - its LocalQueue, released while the database is away, cannot hand its jobs back (localQueue.js
 *   returnJobs, mode RELEASED): those jobs stay locked in the stopped pool's name, and the reaper
 *   releases them once the database answers (worker/liveness.ts);
 * - its LISTEN client is released twice when the connection drops while the pool stops (main.js:
 *   the failed LISTEN query and the pool's deactivation both run `release`, which is async, so the
 *   try/catch around it catches nothing). pg-pool refuses the second release before doing anything.
 */
const harmless: { message: RegExp; note: string }[] = [
  {
    message: /^Error occurred whilst returning jobs from local queue to database queue/,
    note: "graphile-worker could not hand its local queue's jobs back; the reaper releases them",
  },
  {
    message: /^Release called on client which has already been released to the pool/,
    note: 'graphile-worker released its LISTEN client twice as the database went away; the second was refused',
  },
];

/** The note for a rejection graphile-worker leaves unhandled and that can be let go, else undefined. */
export function harmlessGraphileRejection(reason: unknown): string | undefined {
  if (!(reason instanceof Error) || !reason.stack?.includes('/graphile-worker/')) return undefined;
  return harmless.find((known) => known.message.test(reason.message))?.note;
}

/**
 * Keeps a worker process alive through the unhandled rejections above, which would otherwise end
 * the process with every other lane in it. Any other unhandled rejection still ends the process, as
 * Node's default does. Returns the function that removes the handler.
 */
export function survivalOfGraphileRejections(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    const note = harmlessGraphileRejection(reason);
    if (note === undefined) throw reason;
    logger.warn({ err: reason }, note);
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
