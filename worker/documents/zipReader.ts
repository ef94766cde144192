import { createInflateRaw } from 'node:zlib';

import { documentLimits, DocumentRejected } from './limits.ts';
import { readZipDirectory, type ZipEntry } from './zipDirectory.ts';

/** Reads entries of an OOXML zip, every byte counted against one decompression budget. */
export type ZipReader = {
  has(path: string): boolean;
  paths(): string[];
  bytes(path: string): Promise<Buffer>;
  text(path: string): Promise<string>;
  /**
   * Inflates every entry without keeping it, proving each inflates to exactly its declared size,
   * so another reader of the same bytes (exceljs) can hold no more than the directory declares.
   */
  verifyAll(): Promise<void>;
};

const localHeaderSignature = 0x04034b50;

/** The entry's compressed bytes, located through its local header. */
function compressedBytes(data: Buffer, entry: ZipEntry, directoryOffset: number): Buffer {
  const at = entry.localHeaderOffset;
  if (data.readUInt32LE(at) !== localHeaderSignature) {
    throw new DocumentRejected(`malformed zip: no local header for ${entry.name}`);
  }
  const flags = data.readUInt16LE(at + 6);
  const nameLength = data.readUInt16LE(at + 26);
  const start = at + 30 + nameLength + data.readUInt16LE(at + 28);
  const end = start + entry.compressedSize;
  // The data must lie among the entries, and the local name must be the directory's.
  const localName = data.subarray(at + 30, at + 30 + nameLength).toString(flags & 0x800 ? 'utf8' : 'latin1');
  if (end > directoryOffset || localName !== entry.name) {
    throw new DocumentRejected(
      `malformed zip: the local header of ${entry.name} disagrees with the directory`,
    );
  }
  return data.subarray(start, end);
}

/**
 * Inflates an entry chunk by chunk, stopping as soon as it passes its declared size: a lying size
 * costs at most one chunk more than it declared.
 */
async function inflate(entry: ZipEntry, compressed: Buffer, onChunk: (chunk: Buffer) => void): Promise<void> {
  if (entry.method === 0) {
    onChunk(compressed);
    return;
  }
  const inflater = createInflateRaw({ chunkSize: 64 * 1024 });
  inflater.end(compressed);
  let produced = 0;
  try {
    for await (const chunk of inflater as AsyncIterable<Buffer>) {
      produced += chunk.length;
      if (produced > entry.size) {
        throw new DocumentRejected(
          `the zip entry ${entry.name} inflates past its declared ${entry.size} bytes`,
        );
      }
      onChunk(chunk);
    }
  } catch (error) {
    if (error instanceof DocumentRejected) throw error;
    throw new DocumentRejected(`the zip entry ${entry.name} does not inflate: ${(error as Error).message}`);
  } finally {
    inflater.destroy();
  }
  if (produced !== entry.size) {
    throw new DocumentRejected(
      `the zip entry ${entry.name} inflates to ${produced} bytes, not its declared ${entry.size}`,
    );
  }
}

/**
 * Opens a zip by its central directory (zipDirectory.ts): refused before anything is inflated when
 * it has more than maxZipEntries entries or declares more than `maxDeclaredBytes` inflated. Reads
 * then take their declared size from `readBudget` before inflating, and each entry is held to its
 * declared size while it inflates, so neither a lying directory nor a large honest one can make a
 * read hold more than the budget.
 * @throws DocumentRejected when the bytes are not a zip, are malformed, or declare too much.
 */
export function openZip(
  data: Buffer,
  {
    maxDeclaredBytes = documentLimits.maxUnzippedBytes,
    readBudget = documentLimits.maxUnzippedBytes,
  }: { maxDeclaredBytes?: number; readBudget?: number } = {},
): ZipReader {
  const directory = readZipDirectory(data, { maxEntries: documentLimits.maxZipEntries, maxDeclaredBytes });
  const byName = new Map(directory.entries.map((entry) => [entry.name, entry]));
  const entryOf = (path: string) => {
    const entry = byName.get(path);
    if (!entry) throw new DocumentRejected(`missing part ${path}`);
    return entry;
  };
  let used = 0;
  const bytes = async (path: string) => {
    const entry = entryOf(path);
    if (used + entry.size > readBudget) {
      throw new DocumentRejected('the archive inflates past the size limit');
    }
    used += entry.size;
    const compressed = compressedBytes(data, entry, directory.directoryOffset);
    if (entry.method === 0) return compressed;
    const out = Buffer.allocUnsafe(entry.size);
    let filled = 0;
    await inflate(entry, compressed, (chunk) => {
      chunk.copy(out, filled);
      filled += chunk.length;
    });
    return out;
  };
  return {
    has: (path) => byName.has(path),
    paths: () => directory.entries.filter((e) => !e.name.endsWith('/')).map((e) => e.name),
    bytes,
    text: async (path) => (await bytes(path)).toString('utf8'),
    verifyAll: async () => {
      for (const entry of directory.entries) {
        await inflate(entry, compressedBytes(data, entry, directory.directoryOffset), () => {});
      }
    },
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
