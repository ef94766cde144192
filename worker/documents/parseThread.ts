import { parentPort, workerData } from 'node:worker_threads';

import type { NativeKind } from '../../shared/files/nativeDocuments.ts';
import { DocumentRejected } from './limits.ts';
import type { ParsedDocument } from './types.ts';

// The body of a parse thread (started by parseDocument.ts): parses the bytes it was handed and posts
// back the parsed form, or why the bytes are not a document. It holds nothing of the process's (no
// connection, no file, no lock), so terminating it at any point loses nothing.

/** What a thread is started with: the bytes are transferred to it, not copied. */
export type ParseRequest = { kind: NativeKind; filename: string; data: ArrayBuffer };
/**
 * The parsed form comes back as JSON text, as it is stored: plain data, read into objects of the
 * realm that asked (a structured clone would make them Node's main realm's, and a module sandbox
 * such as jest's does not take those for its arrays: exceljs tests `instanceof Array`).
 */
export type ParseReply = { ok: true; json: string } | { ok: false; rejected: boolean; message: string };

/** The parser for a file name's extension (nativeKindOf decided the kind from the same name). */
async function parse({ kind, filename, data }: ParseRequest): Promise<ParsedDocument> {
  const bytes = Buffer.from(data);
  const extension = filename.slice(filename.lastIndexOf('.') + 1).toLowerCase();
  switch (kind) {
    case 'page':
      return (await import('./parsePage.ts')).parsePage(bytes);
    case 'sheet': {
      const { parseCsv, parseXlsx } = await import('./parseSheet.ts');
      return extension === 'xlsx'
        ? parseXlsx(bytes)
        : parseCsv(bytes, filename.slice(0, filename.lastIndexOf('.')));
    }
    case 'deck':
      return (await import('./parseDeck.ts')).parseDeck(bytes);
    default: {
      const never: never = kind;
      throw new Error(`unknown kind ${String(never)}`);
    }
  }
}

async function reply(request: ParseRequest): Promise<ParseReply> {
  try {
    return { ok: true, json: JSON.stringify(await parse(request)) };
  } catch (error) {
    return { ok: false, rejected: error instanceof DocumentRejected, message: (error as Error).message };
  }
}

parentPort!.postMessage(await reply(workerData as ParseRequest));
