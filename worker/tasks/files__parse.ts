import type { JobHelpers, Task } from 'graphile-worker';

import { findFileDocument, upsertFileDocument } from '../../shared/db/queries/fileDocuments.ts';
import { findFileById, updateFileKind } from '../../shared/db/queries/files.ts';
import { documentObjectKey, type ExportFormat, nativeKindOf } from '../../shared/files/nativeDocuments.ts';
import { filesParsePayload } from '../../shared/queue/taskMap.ts';
import { isStorageUnavailable } from '../../shared/storage/storageFailure.ts';
import type { WorkerContext } from '../context.ts';
import { documentLimits } from '../documents/limits.ts';
import { parseDocument } from '../documents/parseDocument.ts';
import { sheetToCsv, sheetToXlsx } from '../documents/sheetExports.ts';
import type { ParsedDocument } from '../documents/types.ts';

const jsonType = 'application/json';

/**
 * Stores what the other export format of a sheet needs (csv ↔ xlsx) beside the parsed form, so an
 * export only streams stored bytes; the upload itself serves its own format.
 */
async function storeExports(
  ctx: WorkerContext,
  fileId: string,
  storageKey: string,
  filename: string,
  parsed: ParsedDocument,
): Promise<Partial<Record<ExportFormat, string>>> {
  switch (parsed.kind) {
    case 'page':
      return { html: storageKey };
    case 'deck':
      return { pptx: storageKey };
    case 'sheet': {
      if (filename.toLowerCase().endsWith('.xlsx')) {
        const csv = sheetToCsv(parsed);
        const key = documentObjectKey(fileId, 'sheet.csv');
        await ctx.objectStore.put(key, csv, csv.length, 'text/csv; charset=utf-8');
        return { xlsx: storageKey, csv: key };
      }
      const xlsx = await sheetToXlsx(parsed);
      const key = documentObjectKey(fileId, 'sheet.xlsx');
      await ctx.objectStore.put(key, xlsx, xlsx.length);
      return { csv: storageKey, xlsx: key };
    }
    default: {
      const never: never = parsed;
      throw new Error(`unknown document ${String(never)}`);
    }
  }
}

function summaryOf(parsed: ParsedDocument): Record<string, unknown> {
  if (parsed.kind === 'deck') return { slides: parsed.slides.length };
  if (parsed.kind === 'sheet') {
    return { sheets: parsed.sheets.length, rows: parsed.sheets[0]?.rows.length ?? 0 };
  }
  return { title: parsed.title };
}

/**
 * `files__parse`: reads an uploaded native document (.html, .csv, .xlsx, .pptx), stores its parsed
 * form and exports, and turns the file into a page, sheet or deck. The parse runs in a thread of its
 * own (parseDocument). Bytes that do not parse, pass a bound of documentLimits, or make their thread
 * pass its heap cap or deadline leave the file kind `file`: logged at warn, not retried, since the
 * same bytes fail the same way. Storage or database failures throw and are retried (maxAttempts 3);
 * a storage outage met on the last attempt queues the parse again (see parseLater).
 */
export function filesParse(ctx: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const { fileId } = filesParsePayload.parse(rawPayload);
    try {
      await parseFile(ctx, fileId, helpers);
    } catch (error) {
      if (!(await parseLater(ctx, fileId, helpers, error))) throw error;
    }
  };
}

// As the job engine does for jobs (storageRetrySeconds, storageGraceSeconds): graphile-worker's
// backoff spends three attempts in about ten seconds, less than a storage server takes to restart.
const storageRetrySeconds = 15;
const storageGraceSeconds = 3600;

/**
 * A parse whose last attempt met a storage outage, for a file uploaded within the grace, is queued
 * again in `storageRetrySeconds` with fresh attempts (under the same job key); true when it was.
 */
async function parseLater(ctx: WorkerContext, fileId: string, helpers: JobHelpers, error: unknown) {
  if (!isStorageUnavailable(error) || helpers.job.attempts < helpers.job.max_attempts) return false;
  const file = await findFileById(ctx.pool, fileId);
  if (!file || Date.now() - Date.parse(file.created_at) > storageGraceSeconds * 1000) return false;
  await helpers.addJob(
    'files__parse',
    { fileId },
    {
      jobKey: `files:parse:${fileId}`,
      maxAttempts: helpers.job.max_attempts,
      runAt: new Date(Date.now() + storageRetrySeconds * 1000),
    },
  );
  helpers.logger.warn(`file ${fileId} parse postponed ${storageRetrySeconds} s: ${(error as Error).message}`);
  return true;
}

async function parseFile(ctx: WorkerContext, fileId: string, helpers: JobHelpers): Promise<void> {
  const file = await findFileById(ctx.pool, fileId);
  const kind = file ? nativeKindOf(file.filename) : undefined;
  // Parsed already (a retry after the commit), or made something else meanwhile (a video).
  if (!file || !kind || (file.kind !== 'file' && file.kind !== kind)) return;
  if ((await findFileDocument(ctx.pool, fileId))?.kind === kind) return;
  if (file.size_bytes > documentLimits.maxInputBytes) {
    if (file.kind !== 'file') await updateFileKind(ctx.pool, fileId, 'file');
    helpers.logger.info(`file ${fileId} is too large to parse as a ${kind}; it stays a file`);
    return;
  }
  const data = await ctx.objectStore.getBuffer(file.storage_key);
  let parsed: ParsedDocument;
  try {
    parsed = await parseDocument(kind, file.filename, data, helpers.abortSignal);
  } catch (error) {
    if (helpers.abortSignal.aborted) throw error;
    // An upload path that labelled the file by its name ahead of the parse is corrected.
    if (file.kind !== 'file') await updateFileKind(ctx.pool, fileId, 'file');
    helpers.logger.warn(
      `file ${fileId} did not parse as a ${kind} (${(error as Error).message}); it stays a file`,
    );
    return;
  }
  const parsedKey = documentObjectKey(fileId, 'parsed.json');
  const json = Buffer.from(JSON.stringify(parsed));
  await ctx.objectStore.put(parsedKey, json, json.length, jsonType);
  const exports = await storeExports(ctx, fileId, file.storage_key, file.filename, parsed);
  await ctx.pool.transaction(async (tx) => {
    await upsertFileDocument(tx, {
      fileId,
      workspaceId: file.workspace_id,
      kind,
      parsedKey,
      exports,
      summary: summaryOf(parsed),
    });
    await updateFileKind(tx, fileId, kind);
  });
}
