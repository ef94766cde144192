import type { RequestHandler } from 'express';

import { maxTranscriptionCost } from '../../../shared/config/prices.ts';
import { transcriptionInputOf } from '../../../shared/generation/transcriptionInput.ts';
import { startBilledJob } from '../../../shared/jobs/billedJob.ts';
import { newJobId } from '../../../shared/jobs/createJob.ts';
import { inputObjectKey, transcriptionJobResult } from '../../../shared/jobs/generationInputs.ts';
import { awaitSyncJob } from '../../../shared/jobs/syncJob.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { whileConnected } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { openUploadIdempotency } from '../../idempotency/uploadKey.ts';
import { discardIfThrows } from '../../uploads/discardIfThrows.ts';
import { receiveAudio } from '../../uploads/receiveAudio.ts';
import { uploadSummary } from '../../uploads/uploadSummary.ts';

/** POST /transcriptions: the upload streams to object storage, a worker transcribes it, the request waits. */
export function postTranscriptions(deps: AppDeps): RequestHandler {
  const { transcription: prices } = deps.config.reservationPrices;
  const maxCostMinor = maxTranscriptionCost(prices);
  return async (req, res) => {
    const received = await receiveAudio(req, res, deps, inputObjectKey('audio', newId('aud')));
    // What the request log and resolveProject read for JSON bodies.
    const audio = uploadSummary(received.stored);
    req.body = { ...received.fields, ...(audio ? { audio } : {}) };
    const job = await discardIfThrows(received, () => {
      const input = transcriptionInputOf(
        received,
        req.principal!.projects.map((p) => p.id),
      );
      const projectId = resolveProject(req);
      return { id: newJobId(), type: 'transcriptions.create' as const, projectId, input, maxCostMinor };
    });
    // Idempotency-Key: the same fields and the same audio bytes are the same request.
    if (await openUploadIdempotency(deps, req, res, received, 'audio')) return;
    // Taking over the job of an earlier request: that job has its own upload.
    if (req.idempotency?.resumeJobId) await received.discard();
    const start = () => discardIfThrows(received, () => startBilledJob(deps, req, job));
    const { result, costMinor } = await whileConnected(res, (signal) =>
      awaitSyncJob(deps, req, { id: job.id, start }, signal),
    );
    const out = transcriptionJobResult.parse(result);
    res.status(201).json({ text: out.text, model: out.model, cost: settledCost(req, res, costMinor) });
  };
}
