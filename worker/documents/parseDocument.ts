import type { NativeKind } from '../../shared/files/nativeDocuments.ts';
import { documentLimits, DocumentRejected } from './limits.ts';
import { parseDeck } from './parseDeck.ts';
import { parsePage } from './parsePage.ts';
import { parseCsv, parseXlsx } from './parseSheet.ts';
import type { ParsedDocument } from './types.ts';

/** The parser for a file name's extension (nativeKindOf decided the kind from the same name). */
function parserFor(
  kind: NativeKind,
  filename: string,
  data: Buffer,
): Promise<ParsedDocument> | ParsedDocument {
  const extension = filename.slice(filename.lastIndexOf('.') + 1).toLowerCase();
  switch (kind) {
    case 'page':
      return parsePage(data);
    case 'sheet':
      return extension === 'xlsx'
        ? parseXlsx(data)
        : parseCsv(data, filename.slice(0, filename.lastIndexOf('.')));
    case 'deck':
      return parseDeck(data);
    default: {
      const never: never = kind;
      throw new Error(`unknown kind ${String(never)}`);
    }
  }
}

/**
 * Parses a native document within parseTimeoutMs (or until `signal` aborts). The parsers yield
 * between zip entries, so the deadline can interrupt a slow document between them.
 * @throws DocumentRejected when the bytes are not a document of that kind, exceed a bound, or time out.
 */
export async function parseDocument(
  kind: NativeKind,
  filename: string,
  data: Buffer,
  signal: AbortSignal,
): Promise<ParsedDocument> {
  if (data.length > documentLimits.maxInputBytes) throw new DocumentRejected('too large to parse');
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DocumentRejected('parsing took too long')),
      documentLimits.parseTimeoutMs,
    );
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([Promise.resolve().then(() => parserFor(kind, filename, data)), deadline]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  }
}
