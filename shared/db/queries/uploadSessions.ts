import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { fileFields } from './files.ts';

const sessionRow = z.object({
  id: z.string(),
  ...fileFields,
  part_size: z.number(),
  part_count: z.number(),
  storage_key: z.string(),
  s3_upload_id: z.string(),
  status: z.string(),
  file_id: z.string().nullable(),
  expires_at: isoTimestamp,
});
export type UploadSessionRow = z.infer<typeof sessionRow>;

const columns = sql.fragment`id, workspace_id, member_id, filename, mime_type, size_bytes, part_size, part_count,
  storage_key, s3_upload_id, status, file_id, expires_at`;

export type NewUploadSession = {
  id: string;
  workspaceId: string;
  memberId: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  partSize: number;
  partCount: number;
  storageKey: string;
  s3UploadId: string;
  ttlSeconds: number;
};

export function insertUploadSession(db: Db, s: NewUploadSession) {
  return db.one(sql.type(sessionRow)`
    insert into upload_sessions (id, workspace_id, member_id, filename, mime_type, size_bytes, part_size,
                                 part_count, storage_key, s3_upload_id, expires_at)
    values (${s.id}, ${s.workspaceId}, ${s.memberId}, ${s.filename}, ${s.mimeType}, ${s.sizeBytes},
            ${s.partSize}, ${s.partCount}, ${s.storageKey}, ${s.s3UploadId},
            now() + make_interval(secs => ${s.ttlSeconds}))
    returning ${columns}
  `);
}

/**
 * The workspace's session, if it is still open and unexpired, locked for the caller's transaction:
 * of two concurrent completes the second waits here and then finds it completed.
 */
export function lockOpenUploadSession(db: Db, workspaceId: string, id: string) {
  return db.maybeOne(sql.type(sessionRow)`
    select ${columns} from upload_sessions
    where id = ${id} and workspace_id = ${workspaceId} and status = 'open' and expires_at > now()
    for update
  `);
}

export function markUploadCompleted(db: Db, id: string, fileId: string) {
  return db.query(sql.typeAlias('void')`
    update upload_sessions set status = 'completed', file_id = ${fileId} where id = ${id}
  `);
}

export function markUploadAborted(db: Db, id: string) {
  return db.query(sql.typeAlias('void')`
    update upload_sessions set status = 'aborted' where id = ${id} and status = 'open'
  `);
}

/** Open sessions past their expiry, locked (skipping ones another sweeper holds). */
export function lockExpiredUploadSessions(db: Db, limit: number) {
  return db.any(sql.type(sessionRow)`
    select ${columns} from upload_sessions
    where status = 'open' and expires_at <= now()
    order by expires_at limit ${limit}
    for update skip locked
  `);
}
