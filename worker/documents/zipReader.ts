import JSZip from 'jszip';

import { documentLimits, DocumentRejected } from './limits.ts';

/** Reads entries of an OOXML zip, every byte counted against one decompression budget. */
export type ZipReader = {
  has(path: string): boolean;
  paths(): string[];
  bytes(path: string): Promise<Buffer>;
  text(path: string): Promise<string>;
};

/**
 * Opens a zip. Entry sizes in its directory are claims, so the budget is charged while inflating:
 * the read stops as soon as the total would pass maxUnzippedBytes.
 * @throws DocumentRejected when the bytes are not a zip, have too many entries, or inflate past the budget.
 */
export async function openZip(
  data: Buffer,
  maxBytes: number = documentLimits.maxUnzippedBytes,
): Promise<ZipReader> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(data, { checkCRC32: false });
  } catch {
    throw new DocumentRejected('not a zip archive');
  }
  const entries = Object.values(zip.files)
    .filter((f) => !f.dir)
    .map((f) => f.name);
  if (entries.length > documentLimits.maxZipEntries) throw new DocumentRejected('too many zip entries');
  let used = 0;
  const bytes = (path: string) =>
    new Promise<Buffer>((resolve, reject) => {
      const entry = zip.file(path);
      if (!entry) return reject(new DocumentRejected(`missing part ${path}`));
      const chunks: Buffer[] = [];
      const stream = entry.nodeStream('nodebuffer');
      stream.on('data', (chunk: Buffer) => {
        used += chunk.length;
        if (used > maxBytes) {
          (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
          reject(new DocumentRejected('the archive inflates past the size limit'));
          return;
        }
        chunks.push(chunk);
      });
      stream.on('error', () => reject(new DocumentRejected(`unreadable part ${path}`)));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });
  return {
    has: (path) => zip.file(path) !== null,
    paths: () => entries,
    bytes,
    text: async (path) => (await bytes(path)).toString('utf8'),
  };
}

/** Resolves a relationship target against the folder of the part that names it (OPC rules). */
export function resolvePart(fromPart: string, target: string): string {
  if (target.startsWith('/')) return target.slice(1);
  const parts = fromPart.split('/').slice(0, -1);
  for (const segment of target.split('/')) {
    if (segment === '..') parts.pop();
    else if (segment !== '.' && segment !== '') parts.push(segment);
  }
  return parts.join('/');
}
