import type { Request, RequestHandler } from 'express';

import { AppError, type Issue } from '../../../shared/errors/appError.ts';
import { newId } from '../../../shared/ids.ts';
import { newJobId } from '../../../shared/jobs/createJob.ts';
import {
  inputObjectKey,
  type TranscriptionJobInput,
  transcriptionJobResult,
} from '../../../shared/jobs/generationInputs.ts';
import { maxTranscriptionCost } from '../../../shared/prices.ts';
import { isStorableText, unstorableMessage } from '../../../shared/storableText.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { awaitSyncJob, type BilledJob, costOf, startBilledJob } from '../../jobs/billedJob.ts';
import { openUploadIdempotency } from '../../uploads/uploadIdempotency.ts';
import { receiveAudio, type ReceivedAudio } from './receiveAudio.ts';

/**
 * The checks the validator and the auth middleware make for JSON bodies, made here for the
 * multipart one, in the same order: the project scope, the file, then the fields.
 */
function checkUpload(req: Request, received: ReceivedAudio): void {
  const { fields } = received;
  if (fields.projectId !== undefined && !req.principal!.projects.some((p) => p.id === fields.projectId)) {
    throw new AppError('api_key_project_scope', `Project '${fields.projectId}' is outside this key's scope.`);
  }
  if (received.unsupportedType !== undefined) {
    throw new AppError(
      'unsupported_media_type',
      received.contentRefused
        ? `The audio field's content is not audio (declared ${received.unsupportedType}).`
        : `The audio field must hold audio; got ${received.unsupportedType}.`,
    );
  }
  if (received.tooLarge) {
    throw new AppError(
      'file_too_large',
      'Audio may be at most 25 MiB; upload longer recordings as a file and start a task.',
    );
  }
  const issues: Issue[] = [...received.issues];
  if (!received.stored) issues.push({ path: 'audio', message: 'is required' });
  else if (received.stored.sizeBytes === 0) issues.push({ path: 'audio', message: 'is empty' });
  if (fields.language !== undefined && !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/.test(fields.language)) {
    issues.push({ path: 'language', message: 'must be an ISO-639 language code' });
  }
  for (const [name, value] of Object.entries(fields)) {
    if (name !== 'prompt' && !isStorableText(value)) issues.push({ path: name, message: unstorableMessage });
  }
  if (received.stored && !isStorableText(received.stored.filename)) {
    issues.push({ path: 'audio', message: `filename ${unstorableMessage}` });
  }
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request body does not match the schema.', { issues });
  }
  const prompt = fields.prompt;
  if (prompt !== undefined && (prompt.length === 0 || prompt.length > 2000)) {
    throw new AppError('invalid_generation_prompt', 'prompt must be 1 to 2000 characters.', {
      issues: [{ path: 'prompt', message: 'must be 1 to 2000 characters' }],
    });
  }
  if (prompt !== undefined && !isStorableText(prompt)) {
    throw new AppError('invalid_generation_prompt', `prompt ${unstorableMessage}.`, {
      issues: [{ path: 'prompt', message: unstorableMessage }],
    });
  }
}

/** POST /transcriptions: the upload streams to object storage, a worker transcribes it, the request waits. */
export function postTranscriptions(deps: AppDeps): RequestHandler {
  const { prices } = deps.config;
  return async (req, res) => {
    const received = await receiveAudio(req, res, deps, inputObjectKey('audio', newId('aud')));
    const stored = received.stored;
    // What the request log and resolveProject read for JSON bodies.
    req.body = {
      ...received.fields,
      ...(stored
        ? { audio: { filename: stored.filename, mimeType: stored.mimeType, sizeBytes: stored.sizeBytes } }
        : {}),
    };
    const jobId = newJobId();
    // No job will read the upload if none is created: it goes now (else the job's worker removes it).
    const dropUpload = received.discard;
    let job: BilledJob;
    try {
      checkUpload(req, received);
      const input: TranscriptionJobInput = {
        objectKey: stored!.key,
        mimeType: stored!.mimeType,
        filename: stored!.filename,
        sizeBytes: stored!.sizeBytes,
        prompt: received.fields.prompt,
        language: received.fields.language,
      };
      job = {
        id: jobId,
        type: 'transcriptions.create',
        projectId: resolveProject(req),
        input,
        maxCostMinor: maxTranscriptionCost(prices),
      };
    } catch (error) {
      await dropUpload();
      throw error;
    }
    // Idempotency-Key: the same fields and the same audio bytes are the same request.
    if (await openUploadIdempotency(deps, req, res, received, 'audio')) return;
    // Taking over the job of an earlier request: that job has its own upload.
    if (req.idempotency?.resumeJobId) await dropUpload();
    const start = () =>
      startBilledJob(deps, req, job).catch(async (error: unknown) => {
        await dropUpload();
        throw error;
      });
    const { result, costMinor } = await awaitSyncJob(deps, req, res, { id: jobId, start });
    const out = transcriptionJobResult.parse(result);
    res.status(201).json({ text: out.text, model: out.model, cost: costOf(req, costMinor) });
  };
}
