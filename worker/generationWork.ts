import type { JobHelpers } from 'graphile-worker';

import type { Prices } from '../shared/config/prices.ts';
import type { RoutedCapability } from '../shared/config/providersConfig.ts';
import { answeredPrices } from '../shared/config/routePrices.ts';
import type { JobRow } from '../shared/db/queries/jobs.ts';
import { audioMaxBytes } from '../shared/jobs/generationInputs.ts';
import { type Answerer, ProviderError, type Providers } from '../shared/providers/types.ts';
import type { ObjectStore } from '../shared/storage/objectStore.ts';
import type { WorkerContext } from './context.ts';
import { type InlineJobDefinition, type JobOutcome, PermanentJobError, WorkerStopping } from './jobEngine.ts';
import { OcrInputError } from './providers/tesseract.ts';

/**
 * What a live call costs at the route entry that answered it (its prices in PROVIDERS), and that
 * entry, which the metering record names. Test keys cost nothing.
 */
export function billedAt(
  ctx: Pick<WorkerContext, 'config'>,
  capability: RoutedCapability,
  answer: { answeredBy?: Answerer },
  livemode: boolean,
  cost: (prices: Prices) => number,
): Pick<JobOutcome, 'costMinor' | 'answeredBy'> {
  const prices = answeredPrices(ctx.config.providers, capability, answer.answeredBy, ctx.config.prices);
  return { costMinor: livemode ? cost(prices) : 0, answeredBy: answer.answeredBy };
}

/** A call stopped by the job's cancellation before it produced anything billable. */
export const cancelledOutcome: JobOutcome = { result: null, usage: {}, costMinor: 0, cancelled: true };

/**
 * Runs a provider call and translates how it ended into what the job engine understands:
 * a worker shutdown requeues; the job's own cancellation yields `cancelled`; input the provider
 * refuses (an unreadable or oversized image, a read past the OCR timeout) and provider refusals fail
 * the job at once (retrying sends the same request); anything else
 * (timeouts, 429, 5xx, network) is rethrown so graphile-worker retries with backoff.
 * Provider messages stay in the worker log: the caller only ever sees a generic error.
 */
export async function callProvider<T>(
  helpers: JobHelpers,
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T | 'cancelled'> {
  try {
    const value = await call();
    if (helpers.abortSignal.aborted) throw new WorkerStopping();
    return value;
  } catch (error) {
    if (helpers.abortSignal.aborted) throw new WorkerStopping();
    if (signal.aborted) return 'cancelled';
    if (error instanceof OcrInputError) {
      throw new PermanentJobError(error.publicCode, error.message);
    }
    if (error instanceof ProviderError && !error.retryable) {
      helpers.logger.error(
        `job ${String((helpers.job.payload as { jobId?: unknown }).jobId)}: ${error.message}`,
      );
      throw new PermanentJobError('internal_error', 'The model provider could not complete this request.');
    }
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound';
}

/**
 * What a worker process may hold of uploaded inputs at once: four of the largest (audio, 25 MiB).
 * Jobs wait for room before reading theirs, so memory stays bounded whatever WORKER_CONCURRENCY is.
 */
export const inputMemoryBytes = 4 * audioMaxBytes;

/**
 * Runs `use` with the uploaded input of a job, read once there is room for it in the process's
 * input budget, and gives the room back when `use` is done. A missing object cannot come back, so
 * that fails the job for good; any other storage error is retried.
 */
export async function withInputObject<T>(
  ctx: Pick<WorkerContext, 'objectStore' | 'inputMemory'>,
  input: { objectKey: string; sizeBytes: number },
  use: (data: Buffer) => Promise<T>,
): Promise<T> {
  const release = await ctx.inputMemory.take(input.sizeBytes);
  try {
    return await use(await readInputObject(ctx.objectStore, input.objectKey));
  } finally {
    release();
  }
}

async function readInputObject(store: ObjectStore, key: string): Promise<Buffer> {
  try {
    return await store.getBuffer(key);
  } catch (error) {
    if (isMissing(error)) {
      throw new PermanentJobError(
        'internal_error',
        'The uploaded input is no longer available; send it again.',
      );
    }
    throw error;
  }
}

/**
 * Deletes a finished job's uploaded input (`input.objectKey`): the `afterFinished` of jobs with an
 * upload, run whoever ended the job (also when the work never ran: cancelled before it started, or
 * ended by the reconciler). Best effort: a leftover object costs storage, not correctness, and the
 * job's outcome is already committed; the hourly sweep removes what is left.
 */
export async function removeJobInput(
  ctx: Pick<WorkerContext, 'objectStore' | 'logger'>,
  job: JobRow,
): Promise<void> {
  const key = job.input.objectKey;
  if (typeof key !== 'string') return;
  try {
    await ctx.objectStore.remove(key);
  } catch (error) {
    if (!isMissing(error)) {
      ctx.logger.warn({ err: error, jobId: job.id, objectKey: key }, 'input cleanup failed');
    }
  }
}

type UploadedInput = { objectKey: string; sizeBytes: number; mimeType: string; filename?: string };

/** An uploaded input as a provider call takes it: its bytes, type and name, and the job's signal. */
export type UploadedFile<I extends UploadedInput> = {
  data: Buffer;
  mimeType: string;
  filename: I['filename'];
  signal: AbortSignal;
};

/**
 * A job over an uploaded input (an image to read, audio to transcribe): reads the upload within the
 * input budget, hands its bytes to the provider, turns the answer into the job's outcome, and deletes
 * the upload once the job has finished (not before: a retry after a crash reads it again).
 */
export function uploadedInputJob<I extends UploadedInput, R>(
  ctx: WorkerContext,
  work: {
    parse: (input: unknown) => I;
    call: (providers: Providers, input: I, file: UploadedFile<I>) => Promise<R>;
    outcome: (answer: R, livemode: boolean) => JobOutcome;
  },
): InlineJobDefinition {
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = work.parse(job.input);
      const providers = ctx.providers(job.livemode);
      const answer = await withInputObject(ctx, input, (data) =>
        callProvider(helpers, signal, () =>
          work.call(providers, input, { data, mimeType: input.mimeType, filename: input.filename, signal }),
        ),
      );
      return answer === 'cancelled' ? cancelledOutcome : work.outcome(answer, job.livemode);
    },
    afterFinished: (job) => removeJobInput(ctx, job),
  };
}
