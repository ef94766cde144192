import { apiBasePath } from '../config/config.ts';
import { ocrCost, type Prices } from '../config/prices.ts';
import type { JobRow } from '../db/queries/jobs.ts';
import type { Db } from '../db/sql.ts';
import { type BilledJobDeps, type JobCaller, startBilledJob } from '../jobs/billedJob.ts';
import { finishFixtureJob, insertFixtureJob } from '../jobs/fixtureJob.ts';
import { inputObjectKey, type OcrJobInput } from '../jobs/generationInputs.ts';
import { toJobDto } from '../jobs/jobDto.ts';
import { newId } from '../primitives/ids.ts';
import type { ObjectStore } from '../storage/objectStore.ts';
import { fixtureOcrOutcome } from './ocrFixture.ts';

export type OcrRequest = { projectId: string; bytes: Buffer; input: Omit<OcrJobInput, 'objectKey'> };

/** The 202 of POST /ocr (also what an Idempotency-Key replays): the job to poll. */
export function ocrAnswer(job: JobRow) {
  return { status: 202, body: { job: toJobDto(job) }, location: `${apiBasePath}/jobs/${job.id}` };
}

/**
 * A test key's OCR job is born succeeded with the fixture text (spec), settled at zero and announced
 * like any finished job, all in the caller's transaction.
 */
export async function fixtureOcrJob(
  tx: Db,
  caller: JobCaller,
  ocr: Omit<OcrRequest, 'bytes'>,
): Promise<JobRow> {
  const job = await insertFixtureJob(tx, caller, { type: 'ocr.extract', ...ocr });
  return finishFixtureJob(tx, caller, job, await fixtureOcrOutcome(ocr.input));
}

/**
 * A live OCR job: the image is stored first (a worker reads it from there), then its hold and job
 * are made; an image whose job could not be made is removed again.
 */
export async function startOcrJob(
  deps: Pick<BilledJobDeps, 'pool' | 'jobs' | 'idempotency'> & { objectStore: ObjectStore; prices: Prices },
  caller: JobCaller,
  ocr: OcrRequest,
): Promise<JobRow> {
  const objectKey = inputObjectKey('ocr', newId('ocr'));
  await deps.objectStore.put(objectKey, ocr.bytes, ocr.bytes.length, ocr.input.mimeType);
  const input: OcrJobInput = { objectKey, ...ocr.input };
  const job = {
    type: 'ocr.extract' as const,
    projectId: ocr.projectId,
    input,
    maxCostMinor: ocrCost(deps.prices, 1),
  };
  try {
    return await startBilledJob(deps, caller, job, ocrAnswer);
  } catch (error) {
    await deps.objectStore.remove(objectKey).catch(() => {});
    throw error;
  }
}
