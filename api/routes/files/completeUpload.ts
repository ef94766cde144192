import type { RequestHandler } from 'express';
import type { DatabasePool } from 'slonik';

import { sniffHeadBytes } from '../../../shared/contentSniff.ts';
import { insertFile } from '../../../shared/db/queries/files.ts';
import {
  lockOpenUploadSession,
  markUploadAborted,
  markUploadCompleted,
  type UploadSessionRow,
} from '../../../shared/db/queries/uploadSessions.ts';
import { AppError, errors, type Issue } from '../../../shared/errors/appError.ts';
import { contentFitsDeclared } from '../../../shared/files/contentPolicy.ts';
import { toFileDto } from '../../../shared/files/dto.ts';
import { scheduleDocumentParse } from '../../../shared/files/nativeDocuments.ts';
import { expectedPartSize } from '../../../shared/files/presignedUploads.ts';
import { commitStorage, releaseStorage } from '../../../shared/files/storageQuota.ts';
import { bareEtag, type ObjectStore, type StoredPart } from '../../../shared/objectStore.ts';
import type { AppDeps } from '../../deps.ts';

type CompleteBody = { parts: { partNumber: number; etag: string }[] };

/** The assembled object does not show its declared type: the session ends, nothing is kept. */
class ContentRefused extends Error {}

/**
 * What is wrong with the parts list against what S3 holds: every part named once, each with the
 * ETag its PUT returned, each of the size the layout gave it (so the object is exactly sizeBytes).
 */
function partIssues(session: UploadSessionRow, named: CompleteBody['parts'], stored: StoredPart[]): Issue[] {
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

async function readHead(store: ObjectStore, session: UploadSessionRow): Promise<Buffer> {
  const bytes = Math.min(session.size_bytes, sniffHeadBytes);
  if (bytes === 0) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of await store.get(session.storage_key, { start: 0, end: bytes - 1 })) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Ends a session whose assembled object was refused: the object goes, the hold is given back. */
async function endRefused(pool: DatabasePool, store: ObjectStore, session: UploadSessionRow) {
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

/**
 * POST /files/uploads/{uploadId}/complete: checks the parts against ListParts, assembles them in S3
 * and records the file, all under a lock on the session: of two concurrent completes one makes the
 * file and the other finds the session completed (not_found, like an expired or foreign one).
 */
export function completeUpload(deps: AppDeps): RequestHandler {
  const store = deps.objectStore;
  return async (req, res) => {
    const principal = req.principal!;
    const uploadId = req.params.uploadId as string;
    const body = req.body as CompleteBody; // shape enforced by the OpenAPI validator
    let refused: UploadSessionRow | undefined;
    try {
      await deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        const session = await lockOpenUploadSession(tx, principal.workspaceId, uploadId);
        if (!session) throw errors.notFound('upload session', uploadId);
        let stored: StoredPart[];
        try {
          stored = await store.listParts(session.storage_key, session.s3_upload_id);
        } catch (error) {
          // S3 no longer knows it (aborted behind our back): as gone as an expired session.
          if ((error as { code?: string }).code === 'NoSuchUpload')
            {throw errors.notFound('upload session', uploadId);}
          throw error;
        }
        const issues = partIssues(session, body.parts, stored);
        if (issues.length > 0) throw errors.invalidBody(issues);
        const ordered = [...body.parts].sort((a, b) => a.partNumber - b.partNumber);
        await store.completeMultipart(session.storage_key, session.s3_upload_id, ordered);
        if (!(await contentFitsDeclared(session.mime_type, await readHead(store, session)))) {
          refused = session;
          throw new ContentRefused();
        }
        await commitStorage(
          tx,
          { id: session.id, workspaceId: session.workspace_id, bytes: session.size_bytes },
          session.size_bytes,
        );
        const fileId = /[^/]+$/.exec(session.storage_key)![0];
        const file = await insertFile(tx, {
          id: fileId,
          workspaceId: session.workspace_id,
          memberId: session.member_id,
          filename: session.filename,
          mimeType: session.mime_type,
          sizeBytes: session.size_bytes,
          kind: 'file',
          storageKey: session.storage_key,
        });
        await markUploadCompleted(tx, session.id, file.id);
        await scheduleDocumentParse(tx, { id: file.id, workspaceId: file.workspace_id, filename: file.filename });
        return { body: { file: toFileDto(file) }, location: null };
      });
    } catch (error) {
      if (!(error instanceof ContentRefused) || !refused) throw error;
      await endRefused(deps.pool, store, refused);
      throw new AppError('invalid_request_body', 'The uploaded content does not match the declared type.', {
        issues: [{ path: 'parts', message: `the assembled file is not ${refused.mime_type}` }],
      });
    }
  };
}
