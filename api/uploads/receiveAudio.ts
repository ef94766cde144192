import type { Request, Response } from 'express';

import { audioMaxBytes } from '../../shared/jobs/generationInputs.ts';
import { isAudioContent } from '../../shared/media/contentSniff.ts';
import { isAudioUpload } from '../../shared/providers/audio.ts';
import type { ReceiveFileDeps } from './receiveFile.ts';
import { type ReceivedUpload, receiveUpload } from './receiveUpload.ts';

export type ReceivedAudio = ReceivedUpload;

/**
 * The POST /transcriptions body: the `audio` file streamed to `key` (25 MiB at most, audio only) and
 * the fields `projectId`, `prompt`, `language`. See receiveUpload for how an upload ends.
 * @throws what receiveUpload throws.
 */
export function receiveAudio(
  req: Request,
  res: Response,
  deps: Omit<ReceiveFileDeps, 'pool'>,
  key: string,
  /** Another API's form (OpenAI's has the audio in `file`, and fields of its own). */
  form: { fileField: string; textFields: readonly string[] } = {
    fileField: 'audio',
    textFields: ['projectId', 'prompt', 'language'],
  },
): Promise<ReceivedAudio> {
  return receiveUpload(
    req,
    res,
    {
      fileField: form.fileField,
      maxFileBytes: audioMaxBytes,
      textFields: form.textFields,
      acceptsFile: isAudioUpload,
      acceptsContent: isAudioContent,
      objectKey: key,
    },
    {
      store: deps.objectStore,
      gauge: deps.uploads,
      idleTimeoutMs: deps.config.uploadIdleTimeoutMs,
      logger: deps.logger,
    },
  );
}
