import { z } from 'zod';

import { columnsOf, type Db, sql } from '../sql.ts';

/** The native document kinds (DESIGN "Native documents"); any other file keeps kind `file`. */
export type NativeKind = 'page' | 'sheet' | 'deck';

export type ExportFormat = 'html' | 'csv' | 'xlsx' | 'pdf' | 'pptx';

const fileDocumentRow = z.object({
  file_id: z.string(),
  workspace_id: z.string(),
  kind: z.enum(['page', 'sheet', 'deck']),
  revision: z.number(),
  parsed_key: z.string(),
  exports: z.record(z.string(), z.string()),
  summary: z.record(z.string(), z.unknown()),
  pdf_key: z.string().nullable(),
  pdf_revision: z.number().nullable(),
  pdf_pages: z.number().nullable(),
});
export type FileDocumentRow = z.infer<typeof fileDocumentRow>;

const columns = columnsOf(fileDocumentRow);

export type ParsedDocument = {
  fileId: string;
  workspaceId: string;
  kind: NativeKind;
  parsedKey: string;
  exports: Partial<Record<ExportFormat, string>>;
  summary: Record<string, unknown>;
};

/** Records a parse; a re-parse bumps the revision, which leaves an earlier PDF stale (not current). */
export function upsertFileDocument(db: Db, doc: ParsedDocument) {
  return db.one(sql.type(fileDocumentRow)`
    insert into file_documents (file_id, workspace_id, kind, parsed_key, exports, summary)
    values (${doc.fileId}, ${doc.workspaceId}, ${doc.kind}, ${doc.parsedKey},
            ${sql.jsonb(doc.exports)}, ${sql.jsonb(doc.summary as never)})
    on conflict (file_id) do update set
      kind = excluded.kind, parsed_key = excluded.parsed_key, exports = excluded.exports,
      summary = excluded.summary, revision = file_documents.revision + 1, parsed_at = now()
    returning ${columns}
  `);
}

export function findFileDocument(db: Db, fileId: string) {
  return db.maybeOne(sql.type(fileDocumentRow)`
    select ${columns} from file_documents where file_id = ${fileId}
  `);
}

/**
 * Records the PDF rendered from `revision`; a no-op (false) when the deck was parsed again meanwhile,
 * since that PDF is already stale.
 */
export async function recordDeckPdf(
  db: Db,
  pdf: { fileId: string; revision: number; pdfKey: string; pages: number },
): Promise<boolean> {
  const row = await db.maybeOne(sql.typeAlias('id')`
    update file_documents
    set pdf_key = ${pdf.pdfKey}, pdf_revision = ${pdf.revision}, pdf_pages = ${pdf.pages}, rendered_at = now()
    where file_id = ${pdf.fileId} and revision = ${pdf.revision} and kind = 'deck'
    returning file_id as id
  `);
  return row !== null;
}

/** The current PDF of a deck (rendered from its latest parse), if any. */
export function currentDeckPdf(doc: FileDocumentRow): { key: string; pages: number } | undefined {
  if (doc.kind !== 'deck' || doc.pdf_key === null || doc.pdf_revision !== doc.revision) return undefined;
  return { key: doc.pdf_key, pages: doc.pdf_pages ?? 0 };
}

const keyRow = z.object({ k: z.string() });

/**
 * Which of `keys` (under `documents/<fileId>/`) a document still uses: its parsed form, an export or
 * its current PDF. A PDF of an earlier revision, or anything of a deleted file, is not.
 */
export function findReferencedDocumentKeys(db: Db, keys: string[]): Promise<readonly string[]> {
  if (keys.length === 0) return Promise.resolve([]);
  return db.anyFirst(sql.type(keyRow)`
    select k from unnest(${sql.array(keys, 'text')}) as k
    where exists (
      select from file_documents d
      where d.file_id = split_part(k, '/', 2)
        and (k = d.parsed_key or k = d.pdf_key
             or exists (select from jsonb_each_text(d.exports) e where e.value = k))
    )
  `);
}
