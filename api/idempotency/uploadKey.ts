import type { Request, Response } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import { requestHash } from '../../shared/idempotency/idempotencyStore.ts';
import type { ReceivedUpload } from '../uploads/receiveUpload.ts';
import type { RequestIdempotency } from './requestIdempotency.ts';

/**
 * Idempotency-Key for a streamed upload, read once its body has arrived: the same fields and the
 * same bytes (their hash; the object key differs per request) are the same request. Returns true
 * when an earlier answer was replayed; then, and whenever this throws, the upload has been dropped.
 * @throws AppError invalid_idempotency_key, and what IdempotencyStore.open throws.
 */
export async function openUploadIdempotency(
  deps: { idempotency: RequestIdempotency },
  req: Request,
  res: Response,
  received: ReceivedUpload,
  fileField: string,
): Promise<boolean> {
  const key = req.get('idempotency-key');
  if (key === undefined) return false;
  if (key.length < 1 || key.length > 255) {
    await received.discard();
    throw new AppError('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 characters.', {
      issues: [{ path: 'idempotency-key', message: 'must be 1 to 255 characters' }],
    });
  }
  const hash = requestHash(req, { ...received.fields, [fileField]: { ...received.stored!, key: undefined } });
  let answered: boolean;
  try {
    answered = await deps.idempotency.openRequest(req, res, key, hash);
  } catch (error) {
    await received.discard();
    throw error;
  }
  if (answered) await received.discard();
  return answered;
}
