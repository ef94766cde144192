import { describe, expect, it } from '@jest/globals';
import JSZip from 'jszip';

import { DocumentRejected } from '../../worker/documents/limits.ts';
import { readZipDirectory } from '../../worker/documents/zipDirectory.ts';
import { openZip } from '../../worker/documents/zipReader.ts';
import { buildZip, type ZipPart } from '../helpers/zipArchive.ts';

const wide = { maxEntries: 1_000_000, maxDeclaredBytes: 1024 ** 4 };

const parts: ZipPart[] = [
  { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
  { name: 'xl/workbook.xml', data: Buffer.from('<workbook>'.padEnd(5000, ' ') + '</workbook>') },
  { name: 'xl/media/a.png', data: Buffer.from('png bytes'), method: 0 },
];

const endAt = (zip: Buffer) => zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
const directoryAt = (zip: Buffer) => zip.readUInt32LE(endAt(zip) + 16);

/** The end record's two entry counts (this disk's, and all) set to `count`. */
const withCount = (zip: Buffer, count: number) =>
  patched(zip, (c) => {
    c.writeUInt16LE(count, endAt(zip) + 8);
    c.writeUInt16LE(count, endAt(zip) + 10);
  });

/** A copy of `zip` with `patch` applied to it. */
function patched(zip: Buffer, patch: (copy: Buffer) => void): Buffer {
  const copy = Buffer.from(zip);
  patch(copy);
  return copy;
}

function rejection(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(DocumentRejected);
    return (error as Error).message;
  }
  throw new Error('not rejected');
}

describe('readZipDirectory', () => {
  it("lists a library's zip with each entry's declared size", async () => {
    const zip = new JSZip();
    zip.file('a.xml', '<a/>'.repeat(1000));
    zip.folder('docs');
    zip.file('docs/b.txt', 'नमस्ते');
    const bytes = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    const directory = readZipDirectory(bytes);
    expect(directory.entries.map(({ name, method, size }) => ({ name, method, size }))).toEqual([
      { name: 'a.xml', method: 8, size: 4000 },
      { name: 'docs/', method: 0, size: 0 },
      { name: 'docs/b.txt', method: 8, size: Buffer.byteLength('नमस्ते') },
    ]);
    expect(directory.declaredBytes).toBe(4000 + Buffer.byteLength('नमस्ते'));
  });

  it('reads ZIP64 end records, and refuses by their count before reading a single record', async () => {
    const many = await buildZip(
      Array.from({ length: 70_000 }, (_, i) => ({
        name: `p/${i}`,
        data: Buffer.alloc(0),
        method: 0 as const,
      })),
    );
    expect(readZipDirectory(many, wide).entries).toHaveLength(70_000);
    // With its central directory wiped, the count alone still refuses it: no record was read.
    // (The ZIP64 end record and its locator, 76 bytes, sit between the directory and the end record.)
    const wiped = patched(many, (z) => z.fill(0, directoryAt(many), endAt(many) - 76));
    expect(rejection(() => readZipDirectory(wiped))).toBe('the zip has 70000 entries (at most 10000)');
  });

  it("reads sizes from ZIP64 extra fields and ZIP64 end records, as exceljs's reader does", async () => {
    const zip = await buildZip(
      parts.map((p) => ({ ...p, zip64Sizes: true })),
      { zip64: true },
    );
    const directory = readZipDirectory(zip);
    expect(directory.entries.map((e) => [e.name, e.size])).toEqual(
      parts.map((p) => [p.name, (p.data as Buffer).length]),
    );
    expect(await openZip(zip).text('xl/workbook.xml')).toBe(parts[1]!.data.toString());
    const read = await JSZip.loadAsync(zip);
    expect(await read.file('xl/workbook.xml')!.async('string')).toBe(parts[1]!.data.toString());
    // A second locator (in the comment) where other readers would look first.
    const locator = Buffer.from([0x50, 0x4b, 0x06, 0x07]);
    const twoLocators = patched(Buffer.concat([zip, locator]), (c) => c.writeUInt16LE(4, endAt(zip) + 20));
    expect(rejection(() => readZipDirectory(twoLocators))).toMatch(/a second ZIP64 locator/);
    // Sizes of 0xFFFFFFFF with no extra field to hold them.
    const bare = patched(zip, (c) => c.writeUInt16LE(0, directoryAt(zip) + 30));
    expect(rejection(() => readZipDirectory(bare))).toMatch(/lacks its ZIP64 sizes/);
  });

  it('refuses an archive that declares more inflated bytes than the bound, before inflating', async () => {
    const bomb = await buildZip([
      { name: 'sheet.xml', data: Buffer.from('x'), declaredSize: 200 * 1024 * 1024 },
    ]);
    expect(rejection(() => readZipDirectory(bomb))).toBe('the zip declares over 128 MiB inflated');
    expect(readZipDirectory(bomb, wide).declaredBytes).toBe(200 * 1024 * 1024);
  });

  it.each<[string, (zip: Buffer) => Buffer, RegExp]>([
    ['bytes that are no zip', () => Buffer.from('hello, not a zip'), /^not a zip archive$/],
    ['an empty file', () => Buffer.alloc(0), /^not a zip archive$/],
    ['a truncated end record', (z) => z.subarray(0, z.length - 5), /end record is truncated/],
    ['a file cut before its end', (z) => z.subarray(0, directoryAt(z) + 10), /^not a zip archive$/],
    ['bytes after the end record', (z) => Buffer.concat([z, Buffer.from('tail')]), /does not end the file/],
    [
      'bytes before the first entry',
      (z) => Buffer.concat([Buffer.from('stub'), z]),
      /not where the end record says/,
    ],
    ['a count under the records', (z) => withCount(z, 2), /more records than it counts/],
    ['a count over the records', (z) => withCount(z, 4), /fewer records than it counts/],
    ['a count the directory cannot hold', (z) => withCount(z, 50), /smaller than its count/],
    [
      'a directory size that lies',
      (z) => patched(z, (c) => c.writeUInt32LE(c.readUInt32LE(endAt(z) + 12) - 1, endAt(z) + 12)),
      /not where the end record says/,
    ],
    [
      'a directory offset past the file',
      (z) => patched(z, (c) => c.writeUInt32LE(0xfffffff0, endAt(z) + 16)),
      /not where the end record says/,
    ],
    ['several disks', (z) => patched(z, (c) => c.writeUInt16LE(1, endAt(z) + 4)), /several disks/],
    ['ZIP64 fields without ZIP64 records', (z) => withCount(z, 0xffff), /no ZIP64 locator/],
    [
      'a record whose name runs past the directory',
      (z) => patched(z, (c) => c.writeUInt16LE(60_000, directoryAt(z) + 28)),
      /runs past the directory/,
    ],
    [
      'an encrypted entry',
      (z) => patched(z, (c) => c.writeUInt16LE(0x801, directoryAt(z) + 8)),
      /is encrypted/,
    ],
    [
      'an unknown compression',
      (z) => patched(z, (c) => c.writeUInt16LE(12, directoryAt(z) + 10)),
      /uses compression 12/,
    ],
    [
      'an entry starting past the entries',
      (z) => patched(z, (c) => c.writeUInt32LE(directoryAt(z), directoryAt(z) + 42)),
      /starts past the entries/,
    ],
    [
      'an end record in the comment',
      (z) =>
        patched(Buffer.concat([z, Buffer.from('PK\u0005\u0006'), Buffer.alloc(18)]), (c) =>
          c.writeUInt16LE(22, endAt(z) + 20),
        ),
      /not where the end record says/,
    ],
  ])('refuses %s', async (_name, corrupt, message) => {
    const zip = await buildZip(parts);
    expect(readZipDirectory(zip).entries).toHaveLength(3);
    expect(rejection(() => readZipDirectory(corrupt(zip)))).toMatch(message);
  });

  it('refuses two entries of one name, and a stored entry with two sizes', async () => {
    const twice = await buildZip([parts[0]!, parts[0]!]);
    expect(rejection(() => readZipDirectory(twice))).toMatch(/two entries are named \[Content_Types\]\.xml/);
    const stored = await buildZip([{ name: 'a', data: Buffer.from('abc'), method: 0, declaredSize: 2 }]);
    expect(rejection(() => readZipDirectory(stored))).toMatch(/stored entry a has two sizes/);
  });
});

describe('openZip', () => {
  it('inflates an entry that keeps to its declared size', async () => {
    const zip = openZip(await buildZip(parts));
    expect(zip.paths()).toEqual(parts.map((p) => p.name));
    expect(await zip.text('xl/workbook.xml')).toBe(parts[1]!.data.toString());
    expect(await zip.text('xl/media/a.png')).toBe('png bytes');
    await zip.verifyAll();
  });

  it('stops an entry as soon as it inflates past what it declared', async () => {
    // 64 MiB of zeros that claim to be 1 KiB: refused after the first 64 KiB chunk.
    function* zeros() {
      for (let i = 0; i < 64; i++) yield Buffer.alloc(1024 * 1024);
    }
    const liar = await buildZip([{ name: 'sheet.xml', data: zeros, declaredSize: 1024 }]);
    await expect(openZip(liar).bytes('sheet.xml')).rejects.toThrow('inflates past its declared 1024 bytes');
    await expect(openZip(liar).verifyAll()).rejects.toThrow('inflates past its declared 1024 bytes');
  });

  it('refuses an entry that inflates to less than it declared', async () => {
    const short = await buildZip([{ name: 'a.xml', data: Buffer.from('<a/>'), declaredSize: 10 }]);
    await expect(openZip(short).verifyAll()).rejects.toThrow('inflates to 4 bytes, not its declared 10');
  });

  it('refuses data that does not inflate, and a local header naming another entry', async () => {
    const zip = await buildZip(parts);
    const garbled = patched(zip, (c) =>
      c.fill(0xff, 30 + '[Content_Types].xml'.length, 30 + '[Content_Types].xml'.length + 4),
    );
    await expect(openZip(garbled).bytes('[Content_Types].xml')).rejects.toThrow(/does not inflate/);
    const renamed = patched(zip, (c) => c.write('X', 30));
    await expect(openZip(renamed).bytes('[Content_Types].xml')).rejects.toThrow(
      /disagrees with the directory/,
    );
  });

  it('charges each read to the budget before inflating it', async () => {
    const zip = new JSZip();
    zip.file('big.xml', Buffer.alloc(4 * 1024 * 1024));
    const bytes = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    expect(bytes.length).toBeLessThan(64 * 1024);
    await expect(openZip(bytes, { readBudget: 1024 * 1024 }).bytes('big.xml')).rejects.toThrow(
      'the archive inflates past the size limit',
    );
    expect((await openZip(bytes, { readBudget: 8 * 1024 * 1024 }).bytes('big.xml')).length).toBe(
      4 * 1024 * 1024,
    );
  });
});
