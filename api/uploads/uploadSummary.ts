import type { StoredUpload } from './receiveUpload.ts';

/**
 * What the request log keeps of an uploaded file in place of its bytes (the log reads `req.body`, as
 * for JSON bodies): its name, type and size.
 */
export function uploadSummary(stored: StoredUpload | undefined) {
  return stored && { filename: stored.filename, mimeType: stored.mimeType, sizeBytes: stored.sizeBytes };
}
