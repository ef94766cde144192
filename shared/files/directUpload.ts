import { type FileRow, insertFile } from '../db/queries/files.ts';
import type { Db } from '../db/sql.ts';
import { AppError, type Issue } from '../errors/appError.ts';
import type { UploadOutcome } from '../generation/uploadOutcome.ts';
import { isStorableText, unstorableMessage } from '../primitives/storableText.ts';
import { isMediaType } from './contentPolicy.ts';
import { scheduleDocumentParse } from './nativeDocuments.ts';
import { commitStorage, type StorageHold } from './storageQuota.ts';

const sizeText = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${bytes} bytes`;

function quotaFull(hold: StorageHold): AppError {
  return new AppError(
    'storage_quota_exceeded',
    `The file is larger than the ${hold.bytes} bytes the workspace storage quota has left.`,
  );
}

/**
 * The checks the validator makes for JSON bodies, made for a POST /files multipart upload: the
 * type, the size (against the direct-upload limit, or the quota hold when that was smaller), the
 * file's presence, media type and name.
 * @throws AppError unsupported_media_type, storage_quota_exceeded, file_too_large, invalid_request_body
 */
export function checkDirectUpload(
  upload: UploadOutcome,
  hold: StorageHold | undefined,
  maxBytes: number,
): void {
  if (upload.unsupportedType !== undefined) {
    throw new AppError(
      'unsupported_media_type',
      upload.contentRefused
        ? `The file's content does not match its declared type ${upload.unsupportedType}.`
        : `Files of type ${upload.unsupportedType} are not accepted.`,
    );
  }
  if (upload.tooLarge) {
    // The hold is what the quota had left: a file past it is one the quota cannot take.
    if (hold && hold.bytes < maxBytes) throw quotaFull(hold);
    throw new AppError(
      'file_too_large',
      `A direct upload may be at most ${sizeText(maxBytes)}; use POST /files/uploads for larger files.`,
    );
  }
  const issues: Issue[] = [...upload.issues];
  const stored = upload.stored;
  if (!stored) issues.push({ path: 'file', message: 'is required' });
  else if (!isMediaType(stored.mimeType)) {
    issues.push({ path: 'file', message: 'Content-Type must be a media type such as image/png' });
  } else if (stored.filename.length === 0 || stored.filename.length > 255) {
    issues.push({ path: 'file', message: 'filename must be 1 to 255 characters' });
  } else if (!isStorableText(stored.filename)) {
    issues.push({ path: 'file', message: `filename ${unstorableMessage}` });
  }
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request body does not match the schema.', { issues });
  }
}

/**
 * Records a stored upload as a file in `memberId`'s drive, in `tx`: the quota hold becomes stored
 * bytes, and a native document's parse is scheduled.
 */
export async function recordDirectUpload(
  tx: Db,
  upload: {
    fileId: string;
    workspaceId: string;
    memberId: string;
    hold: StorageHold;
    stored: NonNullable<UploadOutcome['stored']>;
  },
): Promise<FileRow> {
  const { stored } = upload;
  await commitStorage(tx, upload.hold, stored.sizeBytes);
  const row = await insertFile(tx, {
    id: upload.fileId,
    workspaceId: upload.workspaceId,
    memberId: upload.memberId,
    filename: stored.filename,
    mimeType: stored.mimeType,
    sizeBytes: stored.sizeBytes,
    kind: 'file',
    storageKey: stored.key,
  });
  await scheduleDocumentParse(tx, { id: row.id, workspaceId: row.workspace_id, filename: row.filename });
  return row;
}
