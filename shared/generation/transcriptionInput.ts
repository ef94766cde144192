import { AppError, type Issue } from '../errors/appError.ts';
import type { TranscriptionJobInput } from '../jobs/generationInputs.ts';
import { isStorableText, unstorableMessage } from '../primitives/storableText.ts';
import type { UploadOutcome } from './uploadOutcome.ts';

function promptProblem(prompt: string): string | undefined {
  if (prompt.length === 0 || prompt.length > 2000) return 'must be 1 to 2000 characters';
  if (!isStorableText(prompt)) return unstorableMessage;
  return undefined;
}

/**
 * The job input of a POST /transcriptions upload, after the checks the validator and the auth
 * middleware make for JSON bodies, in the same order: the project scope, the file, the fields, the
 * prompt.
 * @throws AppError api_key_project_scope, unsupported_media_type, file_too_large,
 *   invalid_request_body (issues per field), invalid_generation_prompt
 */
export function transcriptionInputOf(upload: UploadOutcome, projectIds: string[]): TranscriptionJobInput {
  const { fields, stored } = upload;
  if (fields.projectId !== undefined && !projectIds.includes(fields.projectId)) {
    throw new AppError('api_key_project_scope', `Project '${fields.projectId}' is outside this key's scope.`);
  }
  if (upload.unsupportedType !== undefined) {
    throw new AppError(
      'unsupported_media_type',
      upload.contentRefused
        ? `The audio field's content is not audio (declared ${upload.unsupportedType}).`
        : `The audio field must hold audio; got ${upload.unsupportedType}.`,
    );
  }
  if (upload.tooLarge) {
    throw new AppError(
      'file_too_large',
      'Audio may be at most 25 MiB; upload longer recordings as a file and start a task.',
    );
  }
  const issues: Issue[] = [...upload.issues];
  if (!stored) issues.push({ path: 'audio', message: 'is required' });
  else if (stored.sizeBytes === 0) issues.push({ path: 'audio', message: 'is empty' });
  if (fields.language !== undefined && !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/.test(fields.language)) {
    issues.push({ path: 'language', message: 'must be an ISO-639 language code' });
  }
  for (const [name, value] of Object.entries(fields)) {
    if (name !== 'prompt' && !isStorableText(value)) issues.push({ path: name, message: unstorableMessage });
  }
  if (stored && !isStorableText(stored.filename)) {
    issues.push({ path: 'audio', message: `filename ${unstorableMessage}` });
  }
  if (issues.length > 0 || !stored) {
    throw new AppError('invalid_request_body', 'The request body does not match the schema.', { issues });
  }
  const problem = fields.prompt === undefined ? undefined : promptProblem(fields.prompt);
  if (problem) {
    throw new AppError('invalid_generation_prompt', `prompt ${problem}.`, {
      issues: [{ path: 'prompt', message: problem }],
    });
  }
  return {
    objectKey: stored.key,
    mimeType: stored.mimeType,
    filename: stored.filename,
    sizeBytes: stored.sizeBytes,
    prompt: fields.prompt,
    language: fields.language,
  };
}
