import type { Request, RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config.ts';
import type { JobRow } from '../../../shared/db/queries/jobs.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { readOcrData } from '../../../shared/generation/ocrInput.ts';
import { newId } from '../../../shared/ids.ts';
import { inputObjectKey, type OcrJobInput } from '../../../shared/jobs/generationInputs.ts';
import { toJobDto } from '../../../shared/jobs/jobDto.ts';
import { ocrCost } from '../../../shared/prices.ts';
import { fixtureProviders } from '../../../shared/providers/fixtures.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { startBilledJob } from '../../jobs/billedJob.ts';
import { finishFixtureJob, insertFixtureJob } from '../../jobs/fixtureJob.ts';

type OcrBody = {
  data: string;
  mimeType: string;
  filename?: string;
  languageHint?: 'ne' | 'en' | 'auto';
  projectId?: string;
};

/**
 * A test key's OCR job is born succeeded with the fixture text (spec), settled at zero and announced
 * like any finished job, all in the caller's transaction.
 */
async function fixtureJob(tx: Db, req: Request, projectId: string, input: Omit<OcrJobInput, 'objectKey'>) {
  const out = await fixtureProviders.ocr.extract({
    ...input,
    data: Buffer.alloc(0),
    filename: input.filename,
    signal: new AbortController().signal,
  });
  const result = { text: out.text, pages: out.pages, languages: ['en'], model: out.model };
  const job = await insertFixtureJob(tx, req, { type: 'ocr.extract', projectId, input });
  return finishFixtureJob(tx, req, job, { result, usage: { pages: out.pages } });
}

/** POST /ocr: the image goes to object storage, a worker reads it; answers 202 with the job to poll. */
export function postOcr(deps: AppDeps): RequestHandler {
  const { prices } = deps.config;
  return async (req, res) => {
    const body = req.body as OcrBody; // shape enforced by the OpenAPI validator
    const bytes = await readOcrData(body.data);
    const projectId = resolveProject(req);
    const meta = {
      mimeType: body.mimeType,
      filename: body.filename,
      languageHint: body.languageHint ?? 'auto',
      sizeBytes: bytes.length,
    };
    const answer = (job: JobRow) => ({
      status: 202,
      body: { job: toJobDto(job) },
      location: `${apiBasePath}/jobs/${job.id}`,
    });
    if (!req.principal!.livemode) {
      return deps.idempotency.answerFromTransaction(req, res, 202, async (tx) =>
        answer(await fixtureJob(tx, req, projectId, meta)),
      );
    }
    const objectKey = inputObjectKey('ocr', newId('ocr'));
    await deps.objectStore.put(objectKey, bytes, bytes.length, body.mimeType);
    const input: OcrJobInput = { objectKey, ...meta };
    let job: JobRow;
    try {
      job = await startBilledJob(
        deps,
        req,
        { type: 'ocr.extract', projectId, input, maxCostMinor: ocrCost(prices, 1) },
        answer,
      );
    } catch (error) {
      await deps.objectStore.remove(objectKey).catch(() => {});
      throw error;
    }
    const { status, body: created, location } = answer(job);
    res.status(status).location(location).json(created);
  };
}
