import type { RequestHandler } from 'express';

import { readOcrData } from '../../../shared/generation/ocrInput.ts';
import { fixtureOcrJob, ocrAnswer, startOcrJob } from '../../../shared/generation/ocrJob.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';

type OcrBody = {
  data: string;
  mimeType: string;
  filename?: string;
  languageHint?: 'ne' | 'en' | 'auto';
  projectId?: string;
};

/** POST /ocr: the image goes to object storage, a worker reads it; answers 202 with the job to poll. */
export function postOcr(deps: AppDeps): RequestHandler {
  const ocrDeps = { ...deps, prices: deps.config.prices };
  return async (req, res) => {
    const body = req.body as OcrBody; // shape enforced by the OpenAPI validator
    const bytes = await readOcrData(body.data);
    const projectId = resolveProject(req);
    const { mimeType, filename, languageHint = 'auto' } = body;
    const input = { mimeType, filename, languageHint, sizeBytes: bytes.length };
    if (!req.principal!.livemode) {
      return deps.idempotency.answerFromTransaction(req, res, 202, async (tx) =>
        ocrAnswer(await fixtureOcrJob(tx, req, { projectId, input })),
      );
    }
    const {
      status,
      body: created,
      location,
    } = ocrAnswer(await startOcrJob(ocrDeps, req, { projectId, bytes, input }));
    res.status(status).location(location).json(created);
  };
}
