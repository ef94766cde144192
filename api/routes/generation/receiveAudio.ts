import busboy from 'busboy';
import type { Request } from 'express';

import { AppError, type Issue } from '../../../shared/errors/appError.ts';
import { audioMaxBytes } from '../../../shared/generationJobs.ts';
import type { ObjectStore } from '../../../shared/objectStore.ts';
import { isAudioUpload } from '../../../shared/providers/audio.ts';
import { streamToObjectStore } from './streamToObjectStore.ts';

export type ReceivedAudio = {
  /** Set when the audio was stored; the caller owns the object from here on. */
  stored?: { key: string; filename: string; mimeType: string; sizeBytes: number };
  fields: Record<string, string>;
  issues: Issue[];
  unsupportedType?: string;
  tooLarge: boolean;
};

const knownFields = new Set(['projectId', 'prompt', 'language']);

/**
 * Parses a multipart POST /transcriptions body as it arrives, streaming the `audio` file straight
 * to object storage (never whole in memory). Everything is read to the end before answering, so a
 * client still sending gets a clean response rather than a reset. Problems are collected, not
 * thrown: the handler decides their order (DESIGN.md check order).
 * @throws AppError invalid_request_body when the body is not multipart/form-data or is malformed.
 */
export async function receiveAudio(req: Request, store: ObjectStore, key: string): Promise<ReceivedAudio> {
  if (!req.is('multipart/form-data')) {
    throw new AppError('invalid_request_body', 'Send the audio as multipart/form-data in field audio.', {
      issues: [{ path: 'content-type', message: 'must be multipart/form-data' }],
    });
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: { fileSize: audioMaxBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12 },
    });
  } catch (error) {
    throw new AppError('invalid_request_body', 'The multipart body is malformed.', {
      issues: [{ path: 'content-type', message: (error as Error).message }],
      cause: error,
    });
  }
  const out: ReceivedAudio = { fields: {}, issues: [], tooLarge: false };
  const uploads: Promise<void>[] = [];
  let uploadError: unknown;
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on('file', (name, stream, info) => {
      if (name !== 'audio' || out.stored !== undefined) {
        out.issues.push({
          path: name,
          message: name === 'audio' ? 'only one audio file is accepted' : 'unexpected file field',
        });
        stream.resume();
        return;
      }
      const filename = info.filename ?? 'audio';
      if (!isAudioUpload(info.mimeType, filename)) {
        out.unsupportedType = info.mimeType;
        stream.resume();
        return;
      }
      let truncated = false;
      stream.on('limit', () => {
        truncated = true;
      });
      uploads.push(
        streamToObjectStore(store, key, stream, info.mimeType, () => truncated).then(
          (result) => {
            if (result.truncated) out.tooLarge = true;
            else out.stored = { key, filename, mimeType: info.mimeType, sizeBytes: result.sizeBytes };
          },
          (error: unknown) => {
            // Keep reading: a stalled file stream would stall the whole body and the request with it.
            uploadError ??= error;
            stream.resume();
          },
        ),
      );
    });
    parser.on('field', (name, value, info) => {
      if (!knownFields.has(name)) out.issues.push({ path: name, message: 'unknown field' });
      else if (info.valueTruncated) out.issues.push({ path: name, message: 'is too long' });
      else out.fields[name] = value;
    });
    parser.on('filesLimit', () => out.issues.push({ path: 'audio', message: 'only one file is accepted' }));
    parser.on('partsLimit', () => out.issues.push({ path: 'body', message: 'too many parts' }));
    parser.on('fieldsLimit', () => out.issues.push({ path: 'body', message: 'too many fields' }));
    parser.on('error', (error: Error) => {
      req.unpipe(parser);
      req.resume();
      reject(
        new AppError('invalid_request_body', 'The multipart body is malformed.', {
          issues: [{ path: 'body', message: error.message }],
          cause: error,
        }),
      );
    });
    parser.on('close', () => resolve());
    req.pipe(parser);
  });
  try {
    await parsed;
  } catch (error) {
    await Promise.all(uploads);
    if (out.stored) await store.remove(key).catch(() => {});
    throw error;
  }
  await Promise.all(uploads);
  if (uploadError !== undefined) throw uploadError;
  return out;
}
