import type { DatabasePool } from 'slonik';

import { type FileRow, insertFile } from '../db/queries/files.ts';
import {
  lockOpenUploadSession,
  markUploadAborted,
  markUploadCompleted,
  type UploadSessionRow,
} from '../db/queries/uploadSessions.ts';
import type { Db } from '../db/sql.ts';
import { AppError, errors, type Issue } from '../errors/appError.ts';
import { sniffHeadBytes } from '../media/contentSniff.ts';
import { bareEtag, type ObjectStore, type StoredPart } from '../storage/objectStore.ts';
import { contentFitsDeclared } from './contentPolicy.ts';
import { scheduleDocumentParse } from './nativeDocuments.ts';
import { expectedPartSize } from './presignedUploads.ts';
import { commitStorage, releaseStorage } from './storageQuota.ts';

export type NamedPart = { partNumber: number; etag: string };

/**
 * The assembled object does not show its declared type. Thrown out of the completing transaction
 * (which then rolls back); the caller ends the session with `endRefusedUpload`.
 */
export class UploadContentRefused extends Error {
  readonly session: UploadSessionRow;

  constructor(session: UploadSessionRow) {
    super(`the assembled file is not ${session.mime_type}`);
    this.session = session;
  }

  /** The answer the caller gets: its upload ended, nothing of it kept. */
  toAppError(): AppError {
    return new AppError('invalid_request_body', 'The uploaded content does not match the declared type.', {
      issues: [{ path: 'parts', message: this.message }],
    });
  }
}

/**
 * What is wrong with the parts list against what S3 holds: every part named once, each with the
 * ETag its PUT returned, each of the size the layout gave it (so the object is exactly sizeBytes).
 */
function partIssues(session: UploadSessionRow, named: NamedPart[], stored: StoredPart[]): Issue[] {
  const layout = {
    sizeBytes: session.size_bytes,
    partSize: session.part_size,
    partCount: session.part_count,
  };
  const issues: Issue[] = [];
  const byNumber = new Map(stored.map((p) => [p.partNumber, p]));
  const seen = new Set<number>();
  named.forEach((part, i) => {
    const n = part.partNumber;
    if (n > layout.partCount) {
      issues.push({ path: `parts/${i}/partNumber`, message: `must be at most ${layout.partCount}` });
      return;
    }
    if (seen.has(n)) {
      issues.push({ path: `parts/${i}/partNumber`, message: `part ${n} is named twice` });
      return;
    }
    seen.add(n);
    const uploaded = byNumber.get(n);
    const size = expectedPartSize(layout, n);
    if (!uploaded) issues.push({ path: `parts/${i}`, message: `part ${n} was not uploaded` });
    else if (bareEtag(part.etag) !== uploaded.etag) {
      issues.push({ path: `parts/${i}/etag`, message: `is not the ETag S3 returned for part ${n}` });
    } else if (uploaded.size !== size) {
      issues.push({
        path: `parts/${i}`,
        message: `part ${n} holds ${uploaded.size} bytes; it must hold ${size}`,
      });
    }
  });
  const missing = [];
  for (let n = 1; n <= layout.partCount && missing.length < 20; n++) if (!seen.has(n)) missing.push(n);
  if (missing.length > 0) issues.push({ path: 'parts', message: `must name part(s) ${missing.join(', ')}` });
  return issues;
}

function readHead(store: ObjectStore, session: UploadSessionRow): Promise<Buffer> {
  const bytes = Math.min(session.size_bytes, sniffHeadBytes);
  if (bytes === 0) return Promise.resolve(Buffer.alloc(0));
  return store.getBuffer(session.storage_key, { start: 0, end: bytes - 1 });
}

/**
 * The parts S3 holds, or `assembled` when S3 no longer knows the upload because an earlier complete
 * of this session assembled it: its transaction then rolled back (storage or the database failed
 * after S3 answered, or the answer was lost), and the object of exactly the session's size is
 * there under the session's own key. Otherwise an upload S3 no longer knows was aborted behind our
 * back: as gone as an expired session.
 */
async function listPartsOf(
  store: ObjectStore,
  session: UploadSessionRow,
  uploadId: string,
): Promise<StoredPart[] | 'assembled'> {
  try {
    return await store.listParts(session.storage_key, session.s3_upload_id);
  } catch (error) {
    if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
    const object = await store.stat(session.storage_key);
    if (object?.size === session.size_bytes) return 'assembled';
    throw errors.notFound('upload session', uploadId);
  }
}

/**
 * Completes a presigned upload in `tx`: checks the named parts against ListParts, assembles them in
 * S3, and records the file in the uploader's drive with its bytes counted against the quota, under
 * a lock on the session, so of two concurrent completes one makes the file and the other finds the
 * session completed (not_found, like an expired or foreign one). A complete retried after one that
 * assembled the object but did not commit (storage or the database failed on the way) records it.
 * @throws AppError not_found, invalid_request_body (issues per part); UploadContentRefused.
 */
export async function completeUploadInTransaction(
  tx: Db,
  store: ObjectStore,
  upload: { workspaceId: string; uploadId: string; parts: NamedPart[] },
): Promise<FileRow> {
  const session = await lockOpenUploadSession(tx, upload.workspaceId, upload.uploadId);
  if (!session) throw errors.notFound('upload session', upload.uploadId);
  const stored = await listPartsOf(store, session, upload.uploadId);
  if (stored !== 'assembled') {
    const issues = partIssues(session, upload.parts, stored);
    if (issues.length > 0) throw errors.invalidBody(issues);
    // The parts the caller named (all of the layout's, checked above) with the ETags as S3 listed them.
    const named = stored.filter((p) => p.partNumber <= session.part_count);
    await store.completeMultipart(session.storage_key, session.s3_upload_id, named);
  }
  if (!(await contentFitsDeclared(session.mime_type, await readHead(store, session)))) {
    throw new UploadContentRefused(session);
  }
  const bytes = session.size_bytes;
  await commitStorage(tx, { id: session.id, workspaceId: session.workspace_id, bytes }, bytes);
  const file = await insertFile(tx, {
    id: /[^/]+$/.exec(session.storage_key)![0],
    workspaceId: session.workspace_id,
    memberId: session.member_id,
    filename: session.filename,
    mimeType: session.mime_type,
    sizeBytes: bytes,
    kind: 'file',
    storageKey: session.storage_key,
  });
  await markUploadCompleted(tx, session.id, file.id);
  await scheduleDocumentParse(tx, { id: file.id, workspaceId: file.workspace_id, filename: file.filename });
  return file;
}

/** Ends a session whose assembled object was refused: the object goes, the hold is given back. */
export async function endRefusedUpload(pool: DatabasePool, store: ObjectStore, session: UploadSessionRow) {
  await store.remove(session.storage_key).catch(() => {});
  await pool.transaction(async (tx) => {
    await markUploadAborted(tx, session.id);
    await releaseStorage(tx, {
      id: session.id,
      workspaceId: session.workspace_id,
      bytes: session.size_bytes,
    });
  });
}
