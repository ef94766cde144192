import { documentLimits, DocumentRejected } from './limits.ts';

/**
 * A zip's table of contents, read from its End Of Central Directory record (and the ZIP64 one) and
 * its central directory alone, so an archive's size can be judged before a byte is inflated. The
 * sizes are what the archive declares: the reader (zipReader.ts) holds every entry to its declared
 * size when it inflates it, so a lie is caught there, at the lie.
 *
 * Stricter than most readers on purpose: an archive that different readers could read differently
 * (data before the first entry, a directory that holds more or fewer records than its count, a
 * second end record in the comment) is refused, so exceljs's own zip reader, which reads the same
 * bytes after this one has checked them, sees the same entries.
 */

export type ZipEntry = {
  name: string;
  /** 0 stored, 8 deflated: the only methods OOXML writers use. */
  method: 0 | 8;
  compressedSize: number;
  /** Declared inflated size. */
  size: number;
  localHeaderOffset: number;
};

export type ZipDirectory = {
  entries: ZipEntry[];
  /** Where the central directory starts: entry data must end before it. */
  directoryOffset: number;
  /** The sum of the entries' declared inflated sizes. */
  declaredBytes: number;
};

const signatures = {
  entry: 0x02014b50,
  end: 0x06054b50,
  zip64End: 0x06064b50,
  zip64Locator: 0x07064b50,
};
const eocdSize = 22;
const locatorSize = 20;
const entryHeaderSize = 46;
const max16 = 0xffff;
const max32 = 0xffffffff;

function malformed(why: string): DocumentRejected {
  return new DocumentRejected(`malformed zip: ${why}`);
}

function signature(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
}

/** Little-endian fields of `bytes` bytes each at these offsets from a record's start `at`, in order. */
function fields<const Offsets extends readonly number[]>(
  data: Buffer,
  at: number,
  bytes: 2 | 4,
  offsets: Offsets,
): { [K in keyof Offsets]: number } {
  const read = (offset: number) =>
    bytes === 2 ? data.readUInt16LE(at + offset) : data.readUInt32LE(at + offset);
  return offsets.map(read) as { [K in keyof Offsets]: number };
}

/** A ZIP64 field as a number; sizes past 2^53 are not a document's. */
function uint64(data: Buffer, offset: number): number {
  const value = data.readBigUInt64LE(offset);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed('a ZIP64 field is out of range');
  return Number(value);
}

type End = { count: number; directorySize: number; directoryOffset: number; directoryEnd: number };

/**
 * The end record: the last one in the file, as other readers take it, and its comment must run
 * exactly to the end of the file.
 */
function readEnd(data: Buffer): End {
  const at = data.lastIndexOf(signature(signatures.end));
  if (at < 0 || data.length < eocdSize) throw new DocumentRejected('not a zip archive');
  if (at + eocdSize > data.length) throw malformed('the end record is truncated');
  if (at + eocdSize + data.readUInt16LE(at + 20) !== data.length) {
    throw malformed('the end record does not end the file');
  }
  const [disk, directoryDisk, countOnDisk, count] = fields(data, at, 2, [4, 6, 8, 10]);
  const [directorySize, directoryOffset] = fields(data, at, 4, [12, 16]);
  const zip64 =
    [disk, directoryDisk, countOnDisk, count].includes(max16) ||
    directorySize === max32 ||
    directoryOffset === max32;
  if (!zip64) {
    if (disk !== 0 || directoryDisk !== 0 || countOnDisk !== count) throw malformed('spans several disks');
    return { count, directorySize, directoryOffset, directoryEnd: at };
  }
  return readZip64End(data, at);
}

/** The ZIP64 end record, through its locator right before the end record. */
function readZip64End(data: Buffer, endAt: number): End {
  const locatorAt = endAt - locatorSize;
  if (locatorAt < 0 || data.readUInt32LE(locatorAt) !== signatures.zip64Locator) {
    throw malformed('no ZIP64 locator before the end record');
  }
  // Other readers take the last locator in the file: a second one (in the comment) is refused.
  if (data.lastIndexOf(signature(signatures.zip64Locator)) !== locatorAt) {
    throw malformed('a second ZIP64 locator');
  }
  if (data.readUInt32LE(locatorAt + 4) !== 0 || data.readUInt32LE(locatorAt + 16) !== 1) {
    throw malformed('spans several disks');
  }
  const at = uint64(data, locatorAt + 8);
  if (at + 56 > locatorAt || data.readUInt32LE(at) !== signatures.zip64End) {
    throw malformed('the ZIP64 end record is not where its locator says');
  }
  if (at + 12 + uint64(data, at + 4) !== locatorAt) throw malformed('the ZIP64 end record has a wrong size');
  const countOnDisk = uint64(data, at + 24);
  const count = uint64(data, at + 32);
  if (data.readUInt32LE(at + 16) !== 0 || data.readUInt32LE(at + 20) !== 0 || countOnDisk !== count) {
    throw malformed('spans several disks');
  }
  return {
    count,
    directorySize: uint64(data, at + 40),
    directoryOffset: uint64(data, at + 48),
    directoryEnd: at,
  };
}

/**
 * The ZIP64 extra field (id 1) holds, in this order, each of the uncompressed size, compressed
 * size and local header offset whose 32-bit field is 0xFFFFFFFF.
 */
function zip64Values(extra: Buffer, wanted: number): number[] {
  for (let at = 0; at + 4 <= extra.length;) {
    const id = extra.readUInt16LE(at);
    const length = extra.readUInt16LE(at + 2);
    if (at + 4 + length > extra.length) break;
    if (id === 1) {
      if (length < wanted * 8) throw malformed('a ZIP64 extra field is too short');
      return Array.from({ length: wanted }, (_, i) => uint64(extra, at + 4 + i * 8));
    }
    at += 4 + length;
  }
  throw malformed('an entry lacks its ZIP64 sizes');
}

function readEntry(data: Buffer, at: number, end: number): { entry: ZipEntry; next: number } {
  if (at + entryHeaderSize > end || data.readUInt32LE(at) !== signatures.entry) {
    throw malformed('the central directory holds fewer records than it counts');
  }
  const [flags, method] = fields(data, at, 2, [8, 10]);
  let [compressedSize, size, localHeaderOffset] = fields(data, at, 4, [20, 24, 42]);
  const [nameLength, extraLength, commentLength, disk] = fields(data, at, 2, [28, 30, 32, 34]);
  const next = at + entryHeaderSize + nameLength + extraLength + commentLength;
  if (next > end) throw malformed('a directory record runs past the directory');
  const nameBytes = data.subarray(at + entryHeaderSize, at + entryHeaderSize + nameLength);
  // Bit 11: the name is UTF-8; otherwise it is read byte for byte, as exceljs's reader does.
  const name = nameBytes.toString(flags & 0x800 ? 'utf8' : 'latin1');
  if (flags & 0x1) throw new DocumentRejected(`the zip entry ${name} is encrypted`);
  if (method !== 0 && method !== 8) {
    throw new DocumentRejected(`the zip entry ${name} uses compression ${method}`);
  }
  if (disk !== 0) throw malformed('spans several disks');
  const wide = [size, compressedSize, localHeaderOffset].filter((v) => v === max32).length;
  if (wide > 0) {
    const extra = data.subarray(
      at + entryHeaderSize + nameLength,
      at + entryHeaderSize + nameLength + extraLength,
    );
    const values = zip64Values(extra, wide);
    if (size === max32) size = values.shift()!;
    if (compressedSize === max32) compressedSize = values.shift()!;
    if (localHeaderOffset === max32) localHeaderOffset = values.shift()!;
  }
  if (method === 0 && compressedSize !== size) throw malformed(`the stored entry ${name} has two sizes`);
  return { entry: { name, method, compressedSize, size, localHeaderOffset }, next };
}

/**
 * Reads a zip's directory and holds it to the document limits: at most maxZipEntries entries, and
 * at most maxUnzippedBytes declared inflated, all entries together. Costs no inflating and at most
 * maxZipEntries records of reading, whatever the archive claims.
 * @throws DocumentRejected when the bytes are not a zip, are malformed, or declare too much.
 */
export function readZipDirectory(
  data: Buffer,
  limits: { maxEntries: number; maxDeclaredBytes: number } = {
    maxEntries: documentLimits.maxZipEntries,
    maxDeclaredBytes: documentLimits.maxUnzippedBytes,
  },
): ZipDirectory {
  const end = readEnd(data);
  if (end.count > limits.maxEntries) {
    throw new DocumentRejected(`the zip has ${end.count} entries (at most ${limits.maxEntries})`);
  }
  // The directory must sit right before the end records: bytes between them, or before the first
  // entry (a prepended stub), would make readers disagree on where entries start.
  if (end.directoryOffset + end.directorySize !== end.directoryEnd) {
    throw malformed('the central directory is not where the end record says');
  }
  if (end.directorySize < end.count * entryHeaderSize) {
    throw malformed('the central directory is smaller than its count');
  }
  const entries: ZipEntry[] = [];
  const names = new Set<string>();
  let declaredBytes = 0;
  let at = end.directoryOffset;
  for (let i = 0; i < end.count; i++) {
    const { entry, next } = readEntry(data, at, end.directoryEnd);
    declaredBytes += entry.size;
    if (declaredBytes > limits.maxDeclaredBytes) {
      throw new DocumentRejected(`the zip declares over ${limits.maxDeclaredBytes / 2 ** 20} MiB inflated`);
    }
    if (names.has(entry.name)) throw malformed(`two entries are named ${entry.name}`);
    if (entry.localHeaderOffset + 30 > end.directoryOffset) {
      throw malformed(`the entry ${entry.name} starts past the entries`);
    }
    names.add(entry.name);
    entries.push(entry);
    at = next;
  }
  if (at !== end.directoryEnd) throw malformed('the central directory holds more records than it counts');
  return { entries, directoryOffset: end.directoryOffset, declaredBytes };
}
