import { z } from 'zod';

import { type Db, idRow, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';
import { findInWorkspace, type NewWorkspaceRecord } from './workspaceRows.ts';

/** Who stored a file and what it is: the columns an upload session hands on to the file it completes into. */
export const fileFields = {
  workspace_id: z.string(),
  member_id: z.string().nullable(),
  filename: z.string(),
  mime_type: z.string(),
  size_bytes: z.number(),
};

const fileRow = z.object({
  id: z.string(),
  ...fileFields,
  kind: z.string(),
  storage_key: z.string(),
  task_id: z.string().nullable(),
  created_at: isoTimestamp,
});
export type FileRow = z.infer<typeof fileRow>;

const columns = sql.fragment`id, workspace_id, member_id, filename, mime_type, size_bytes, kind, storage_key, task_id, created_at`;

export type NewFile = NewWorkspaceRecord & {
  memberId: string | null;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  kind: string;
  storageKey: string;
  /** The task whose media board shows the file (a video rendered on it). */
  taskId?: string | null;
};

export function insertFile(db: Db, f: NewFile) {
  return db.one(sql.type(fileRow)`
    insert into files (id, workspace_id, member_id, filename, mime_type, size_bytes, kind, storage_key, task_id)
    values (${f.id}, ${f.workspaceId}, ${f.memberId}, ${f.filename}, ${f.mimeType}, ${f.sizeBytes}, ${f.kind},
            ${f.storageKey}, ${f.taskId ?? null})
    returning ${columns}
  `);
}

export function findWorkspaceFile(db: Db, workspaceId: string, fileId: string) {
  return findInWorkspace(db, { name: 'files', row: fileRow, columns }, workspaceId, fileId);
}

/** Which of `fileIds` are files of the workspace (the others are reported as not found). */
export function findWorkspaceFileIds(
  db: Db,
  workspaceId: string,
  fileIds: string[],
): Promise<readonly string[]> {
  if (fileIds.length === 0) return Promise.resolve([]);
  return db.anyFirst(sql.type(idRow)`
    select id from files where workspace_id = ${workspaceId} and id = any(${sql.array(fileIds, 'text')})
  `);
}

const storageKeyRow = z.object({ storage_key: z.string() });

/** Which of `keys` hold the bytes of a file, or will (an open presigned upload session). */
export function findReferencedFileKeys(db: Db, keys: string[]): Promise<readonly string[]> {
  if (keys.length === 0) return Promise.resolve([]);
  return db.anyFirst(sql.type(storageKeyRow)`
    select storage_key from files where storage_key = any(${sql.array(keys, 'text')})
    union
    select storage_key from upload_sessions
    where status = 'open' and storage_key = any(${sql.array(keys, 'text')})
  `);
}

/** Sets what a file is once its bytes were read (a native document's kind; see files__parse). */
export async function updateFileKind(db: Db, fileId: string, kind: string): Promise<void> {
  await db.query(sql.typeAlias('void')`update files set kind = ${kind} where id = ${fileId}`);
}

/** A file by id alone, for the worker (its jobs carry ids checked when they were created). */
export function findFileById(db: Db, fileId: string) {
  return db.maybeOne(sql.type(fileRow)`select ${columns} from files where id = ${fileId}`);
}

const listedFileRow = fileRow.extend({ cursor_at: cursorAtText });

/** A workspace's files, newest first, a page after (created_at, id). */
export function listWorkspaceFiles(db: Db, workspaceId: string, page: ListPage) {
  return db.any(sql.type(listedFileRow)`
    select ${columns}, ${cursorAt()} from files
    where workspace_id = ${workspaceId} ${afterPosition(page)}
    ${newestFirst(page)}
  `);
}

/** Files whose id or name starts with `prefix` (names case-insensitively), newest first (completion). */
export function completeWorkspaceFiles(db: Db, workspaceId: string, prefix: string, limit: number) {
  return db.any(sql.type(z.object({ id: z.string(), filename: z.string() }))`
    select id, filename from files
    where workspace_id = ${workspaceId}
      and (starts_with(id, ${prefix}) or starts_with(lower(filename), lower(${prefix})))
    order by created_at desc, id desc
    limit ${limit}
  `);
}
