import { apiBasePath } from '../../shared/config/config.ts';
import { findFileDocument } from '../../shared/db/queries/fileDocuments.ts';
import { findWorkspaceFile } from '../../shared/db/queries/files.ts';
import { found } from '../../shared/errors/appError.ts';
import { deckToMarkdown, htmlToMarkdown } from '../../shared/files/documentText.ts';
import { isNativeKind } from '../../shared/files/nativeDocuments.ts';
import type { McpDeps } from './methodContext.ts';

/** The largest file (or document text) served inside resources/read; larger ones are a link. */
export const maxInlineBytes = 1024 * 1024;

type Contents = { uri: string; mimeType: string; text?: string; blob?: string };

/** A link to the bytes (text/uri-list, RFC 2483), downloaded with the same credential. */
function link(uri: string, url: string): Contents[] {
  return [{ uri, mimeType: 'text/uri-list', text: `${url}\r\n` }];
}

/** A native document's text, when it has been parsed and is small enough to inline; else undefined. */
async function documentText(
  deps: McpDeps,
  file: { id: string; kind: string; filename: string },
  uri: string,
  base: string,
): Promise<Contents[] | undefined> {
  if (!isNativeKind(file.kind)) return undefined;
  const doc = await findFileDocument(deps.pool, file.id);
  if (!doc) return undefined;
  const key = doc.kind === 'deck' ? doc.parsed_key : doc.kind === 'page' ? doc.exports.html : doc.exports.csv;
  if (!key) return undefined;
  const size = (await deps.objectStore.stat(key))?.size ?? Infinity;
  if (size > maxInlineBytes) {
    return doc.kind === 'sheet' ? link(uri, `${base}/export?format=csv`) : link(uri, `${base}/content`);
  }
  const text = (await deps.objectStore.getBuffer(key)).toString('utf8');
  switch (doc.kind) {
    case 'page':
      return [{ uri, mimeType: 'text/markdown', text: htmlToMarkdown(text) }];
    case 'deck':
      return [{ uri, mimeType: 'text/markdown', text: deckToMarkdown(file.filename, JSON.parse(text)) }];
    case 'sheet':
      return [{ uri, mimeType: 'text/csv', text }];
    default: {
      const never: never = doc.kind;
      throw new Error(`unknown document kind ${String(never)}`);
    }
  }
}

/**
 * A file resource's contents: pages and decks as markdown, sheets as CSV, any other file up to
 * maxInlineBytes as a base64 blob of its bytes, anything larger as a link to its REST download.
 * @throws AppError not_found for a file outside the workspace.
 */
export async function readFileResource(
  deps: McpDeps,
  workspaceId: string,
  fileId: string,
  uri: string,
): Promise<Contents[]> {
  const file = found(await findWorkspaceFile(deps.pool, workspaceId, fileId), 'file', fileId);
  const base = `${deps.config.publicBaseUrl}${apiBasePath}/files/${encodeURIComponent(file.id)}`;
  const text = await documentText(deps, file, uri, base);
  if (text) return text;
  if (file.size_bytes > maxInlineBytes) return link(uri, `${base}/content`);
  const bytes = await deps.objectStore.getBuffer(file.storage_key);
  return [{ uri, mimeType: file.mime_type, blob: bytes.toString('base64') }];
}
