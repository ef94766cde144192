import { Readable } from 'node:stream';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';

/**
 * A zip writer for tests that need archives no library writes: entries produced as a stream (a
 * part inflating to hundreds of megabytes, never held whole), more entries than 16 bits count
 * (ZIP64 end records), or sizes that lie.
 */
export type ZipPart = {
  name: string;
  /** The part's bytes, or a generator of them (deflated as they come). */
  data: Buffer | (() => Iterable<Buffer>);
  /** Deflate (default) or store. */
  method?: 0 | 8;
  /** The inflated size the headers claim, when it should not be the real one. */
  declaredSize?: number;
  /** Sizes in a ZIP64 extra field (id 1), the 32-bit fields 0xFFFFFFFF, as streaming writers do. */
  zip64Sizes?: boolean;
};

type Written = {
  name: Buffer;
  method: number;
  crc: number;
  compressed: Buffer[];
  compressedSize: number;
  size: number;
};

async function compress(part: ZipPart): Promise<Written> {
  const name = Buffer.from(part.name, 'utf8');
  const method = part.method ?? 8;
  if (Buffer.isBuffer(part.data)) {
    const compressed = method === 8 ? deflateRawSync(part.data) : part.data;
    return {
      name,
      method,
      crc: crc32(part.data),
      compressed: [compressed],
      compressedSize: compressed.length,
      size: part.data.length,
    };
  }
  if (method !== 8) throw new Error('a streamed part is deflated');
  let crc = 0;
  let size = 0;
  const source = part.data;
  const counted = function* () {
    for (const chunk of source()) {
      crc = crc32(chunk, crc);
      size += chunk.length;
      yield chunk;
    }
  };
  const compressed: Buffer[] = [];
  let compressedSize = 0;
  for await (const chunk of Readable.from(counted()).pipe(createDeflateRaw({ level: 9 }))) {
    compressed.push(chunk as Buffer);
    compressedSize += (chunk as Buffer).length;
  }
  return { name, method, crc, compressed, compressedSize, size };
}

function header(fields: [number, 2 | 4 | 8][]): Buffer {
  const out = Buffer.alloc(fields.reduce((n, [, width]) => n + width, 0));
  let at = 0;
  for (const [value, width] of fields) {
    if (width === 2) out.writeUInt16LE(value, at);
    else if (width === 4) out.writeUInt32LE(value, at);
    else out.writeBigUInt64LE(BigInt(value), at);
    at += width;
  }
  return out;
}

/**
 * Builds a zip of `parts`; past 65,535 entries (or with `zip64`) its end records are ZIP64's, as
 * zip tools write them.
 */
export async function buildZip(
  parts: ZipPart[],
  { zip64 = false }: { zip64?: boolean } = {},
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const directory: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const w = await compress(part);
    const declared = part.declaredSize ?? w.size;
    const extra = part.zip64Sizes
      ? header([
          [1, 2],
          [16, 2],
          [declared, 8],
          [w.compressedSize, 8],
        ])
      : Buffer.alloc(0);
    const [compressedField, sizeField] = part.zip64Sizes
      ? [0xffffffff, 0xffffffff]
      : [w.compressedSize, declared];
    // Version 20, flag bit 11 (UTF-8 names), DOS time zero.
    const common: [number, 2 | 4][] = [
      [20, 2],
      [0x800, 2],
      [w.method, 2],
      [0, 2],
      [0, 2],
      [w.crc, 4],
      [compressedField, 4],
      [sizeField, 4],
      [w.name.length, 2],
      [extra.length, 2],
    ];
    const local = Buffer.concat([header([[0x04034b50, 4], ...common]), w.name, extra]);
    chunks.push(local, ...w.compressed);
    directory.push(
      header([[0x02014b50, 4], [20, 2], ...common, [0, 2], [0, 2], [0, 2], [0, 4], [offset, 4]]),
      w.name,
      extra,
    );
    offset += local.length + w.compressedSize;
  }
  const directoryBytes = Buffer.concat(directory);
  const count = parts.length;
  const tail: Buffer[] = [];
  if (zip64 || count > 0xffff) {
    const zip64At = offset + directoryBytes.length;
    tail.push(
      header([
        [0x06064b50, 4],
        [44, 8],
        [45, 2],
        [45, 2],
        [0, 4],
        [0, 4],
        [count, 8],
        [count, 8],
        [directoryBytes.length, 8],
        [offset, 8],
      ]),
      header([
        [0x07064b50, 4],
        [0, 4],
        [zip64At, 8],
        [1, 4],
      ]),
    );
  }
  const small = zip64 ? 0xffff : Math.min(count, 0xffff);
  tail.push(
    header([
      [0x06054b50, 4],
      [0, 2],
      [0, 2],
      [small, 2],
      [small, 2],
      [directoryBytes.length, 4],
      [offset, 4],
      [0, 2],
    ]),
  );
  return Buffer.concat([...chunks, directoryBytes, ...tail]);
}
