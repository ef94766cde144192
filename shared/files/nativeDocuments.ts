import { z } from 'zod';

import type { ExportFormat, NativeKind } from '../db/queries/fileDocuments.ts';
import type { Db } from '../db/sql.ts';
import { enqueue } from '../queue/enqueue.ts';

export type { ExportFormat, NativeKind } from '../db/queries/fileDocuments.ts';

const kindOfExtension: Record<string, NativeKind> = {
  html: 'page',
  htm: 'page',
  csv: 'sheet',
  xlsx: 'sheet',
  pptx: 'deck',
};

/** The native kind a file would have by its name, before its bytes are read (they decide: see files__parse). */
export function nativeKindOf(filename: string): NativeKind | undefined {
  const dot = filename.lastIndexOf('.');
  if (dot < 0) return undefined;
  const extension = filename.slice(dot + 1).toLowerCase();
  return Object.hasOwn(kindOfExtension, extension) ? kindOfExtension[extension] : undefined;
}

/** Export formats by kind (spec "File"); a deck's pdf exists only once rendered. */
export const exportFormatsOf: Record<NativeKind, readonly ExportFormat[]> = {
  page: ['html'],
  sheet: ['csv', 'xlsx'],
  deck: ['pdf', 'pptx'],
};

export function isNativeKind(kind: string): kind is NativeKind {
  return Object.hasOwn(exportFormatsOf, kind);
}

export const exportContentType: Record<ExportFormat, string> = {
  html: 'text/html; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

export const deckExportInput = z.object({ fileId: z.string().min(1) });
export type DeckExportInput = z.infer<typeof deckExportInput>;

/** Where a file's derived objects live: beside each other, apart from uploads and job inputs. */
export const documentObjectKey = (fileId: string, name: string) => `documents/${fileId}/${name}`;

/**
 * Schedules the parse of a native document (.html/.htm, .csv/.xlsx, .pptx) in the caller's
 * transaction, so the job exists iff the file row commits; other files schedule nothing. The job key
 * makes a repeated call for the same file one pending parse. The parse is a platform task, not a
 * public job: a file that does not parse simply stays kind `file`.
 */
export async function scheduleDocumentParse(
  db: Db,
  file: { id: string; workspaceId: string; filename: string },
): Promise<void> {
  if (!nativeKindOf(file.filename)) return;
  await enqueue(
    db,
    'files__parse',
    { fileId: file.id },
    { jobKey: `files:parse:${file.id}`, maxAttempts: 3 },
  );
}
