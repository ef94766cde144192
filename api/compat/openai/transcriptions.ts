import type { RequestHandler } from 'express';

import { maxTranscriptionCost } from '../../../shared/config/prices.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { transcriptionInputOf } from '../../../shared/generation/transcriptionInput.ts';
import { startBilledJob } from '../../../shared/jobs/billedJob.ts';
import { newJobId } from '../../../shared/jobs/createJob.ts';
import { inputObjectKey, transcriptionJobResult } from '../../../shared/jobs/generationInputs.ts';
import { awaitSyncJob } from '../../../shared/jobs/syncJob.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import type { AppDeps } from '../../deps.ts';
import { whileConnected } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { openUploadIdempotency } from '../../idempotency/uploadKey.ts';
import { discardIfThrows } from '../../uploads/discardIfThrows.ts';
import { receiveAudio } from '../../uploads/receiveAudio.ts';
import { uploadSummary } from '../../uploads/uploadSummary.ts';
import { chosenRoute } from '../modelChoice.ts';
import { compatProject } from '../project.ts';

// OpenAI's form: the audio in `file`; fields the SDK may send that change nothing here are taken too.
const form = {
  fileField: 'file',
  textFields: ['model', 'prompt', 'language', 'response_format', 'temperature', 'timestamp_granularities[]'],
};
const formats = ['json', 'text', 'verbose_json'];

/** POST /audio/transcriptions: the transcriptions.create job of POST /transcriptions, in OpenAI's form and answers. */
export function audioTranscriptions(deps: AppDeps): RequestHandler {
  const maxCostMinor = maxTranscriptionCost(deps.config.reservationPrices.transcription);
  return async (req, res) => {
    const received = await receiveAudio(req, res, deps, inputObjectKey('audio', newId('aud')), form);
    const audio = uploadSummary(received.stored);
    req.body = { ...received.fields, ...(audio ? { audio } : {}) };
    const format = received.fields.response_format ?? 'json';
    const job = await discardIfThrows(received, () => {
      const route = chosenRoute(deps.config.providers, 'transcription', received.fields.model);
      if (!formats.includes(format)) {
        throw new AppError('invalid_request_body', `response_format must be one of ${formats.join(', ')}.`, {
          issues: [{ path: 'response_format', message: `must be one of ${formats.join(', ')}` }],
        });
      }
      const input = transcriptionInputOf(
        received,
        req.principal!.projects.map((p) => p.id),
      );
      const projectId = compatProject(req, 'openai-project');
      const routed = { ...input, ...(route.name === 'default' ? {} : { route: route.name }) };
      return {
        id: newJobId(),
        type: 'transcriptions.create' as const,
        projectId,
        input: routed,
        maxCostMinor,
      };
    });
    if (await openUploadIdempotency(deps, req, res, received, 'file')) return;
    if (req.idempotency?.resumeJobId) await received.discard();
    const start = () => discardIfThrows(received, () => startBilledJob(deps, req, job));
    const { result, costMinor } = await whileConnected(res, (signal) =>
      awaitSyncJob(deps, req, { id: job.id, start }, signal),
    );
    settledCost(req, res, costMinor);
    const out = transcriptionJobResult.parse(result);
    if (format === 'text') return res.status(200).type('text/plain').send(out.text);
    if (format === 'verbose_json') {
      const language = received.fields.language ?? 'unknown';
      return res
        .status(200)
        .json({ task: 'transcribe', language, duration: out.durationSeconds, text: out.text, segments: [] });
    }
    res.status(200).json({ text: out.text });
  };
}
