import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import pptxgenjs from 'pptxgenjs';
import { z } from 'zod';

import { insertFile } from '../../shared/db/queries/files.ts';
import { sql } from '../../shared/db/sql.ts';
import { scheduleDocumentParse } from '../../shared/files/nativeDocuments.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { encodePng } from '../../shared/providers/png.ts';
import { ObjectStore } from '../../shared/storage/objectStore.ts';
import { waitUntil } from '../integration/api/tasks.helpers.ts';
import { api, bearer, type TestContext } from './context.ts';
import type { Tenant } from './fixtures.ts';
import { buildZip, type ZipPart } from './zipArchive.ts';

// Its types describe the CommonJS build (default export nested); Node's import gets the ES build's class.
const PptxGenJS = pptxgenjs as unknown as typeof pptxgenjs.default;

/** The media types a client uploads these documents as. */
export const xlsxType = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const pptxType = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

export const deckSlides = [
  ['Quarterly review', 'नेपाल सरकार'],
  ['Revenue grew 12 percent', 'Chart below'],
  ['Next steps', 'Ship the renderer'],
] as const;

/** A real 3-slide pptx made with pptxgenjs: text (Nepali included) on each slide, a PNG on the second. */
export async function makeDeckPptx(): Promise<Buffer> {
  const pptx = new PptxGenJS();
  pptx.layout = 'LAYOUT_16x9';
  const png = encodePng(32, 16, (x) => (x < 16 ? [200, 30, 30] : [30, 30, 200])).toString('base64');
  for (const [i, [title, body]] of deckSlides.entries()) {
    const slide = pptx.addSlide();
    slide.addText(title, { x: 0.5, y: 0.3, w: 9, h: 1, fontSize: 32, bold: true });
    slide.addText(body, { x: 0.5, y: 1.5, w: 9, h: 1, fontSize: 20 });
    if (i === 1) slide.addImage({ data: `image/png;base64,${png}`, x: 3, y: 3, w: 4, h: 2 });
  }
  return (await pptx.write({ outputType: 'nodebuffer' })) as Buffer;
}

export async function makeXlsx(rows: (string | number)[][]): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  workbook.addWorksheet('Budget').addRows(rows);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

/** The parts of a zip made by a library, as parts to write again. */
async function partsOf(zipBytes: Buffer): Promise<ZipPart[]> {
  const zip = await JSZip.loadAsync(zipBytes);
  const files = Object.values(zip.files).filter((f) => !f.dir);
  return Promise.all(files.map(async (f) => ({ name: f.name, data: await f.async('nodebuffer') })));
}

/**
 * A zip bomb by ratio: a real workbook whose sheet is replaced by `sheetBytes` of rows (six inline
 * strings each), about 1.2 % of that once deflated: 144 MiB of XML in a ~1.8 MiB file. The sheet is
 * deflated as it is generated, never held whole. `declaredSize` makes its headers lie.
 */
export async function makeInflatingXlsx(
  sheetBytes = 144 * 1024 * 1024,
  { declaredSize }: { declaredSize?: number } = {},
): Promise<Buffer> {
  const parts = (await partsOf(await makeXlsx([['a']]))).filter((p) => p.name !== 'xl/worksheets/sheet1.xml');
  const cells = '<c t="inlineStr"><is><t>x</t></is></c>'.repeat(6);
  function* sheet(): Iterable<Buffer> {
    yield Buffer.from(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>',
    );
    let produced = 0;
    for (let row = 1; produced < sheetBytes;) {
      const rows: string[] = [];
      for (let i = 0; i < 256; i++) rows.push(`<row r="${row++}">${cells}</row>`);
      const chunk = Buffer.from(rows.join(''));
      produced += chunk.length;
      yield chunk;
    }
    yield Buffer.from('</sheetData></worksheet>');
  }
  return buildZip([...parts, { name: 'xl/worksheets/sheet1.xml', data: sheet, declaredSize }]);
}

/** A real deck with `entries` parts in all: empty stored padding past its own (ZIP64 end records). */
export async function makeCrowdedPptx(entries = 100_000): Promise<Buffer> {
  const parts = await partsOf(await makeDeckPptx());
  const empty = Buffer.alloc(0);
  for (let i = parts.length; i < entries; i++) parts.push({ name: `p/${i}`, data: empty, method: 0 });
  return buildZip(parts);
}

/**
 * Stores `bytes` as an uploaded file of the tenant (as POST /files will): the object, then the row
 * and its parse job in one transaction. Returns the file id.
 */
export async function storeFile(
  t: TestContext,
  tenant: Tenant,
  filename: string,
  bytes: Buffer,
  mimeType = 'application/octet-stream',
): Promise<string> {
  const id = newId('file');
  const storageKey = `files/${tenant.workspaceId}/${id}`;
  await new ObjectStore(t.s3).put(storageKey, bytes, bytes.length, mimeType);
  await t.deps.pool.transaction(async (tx) => {
    await insertFile(tx, {
      id,
      workspaceId: tenant.workspaceId,
      memberId: tenant.memberId,
      filename,
      mimeType,
      sizeBytes: bytes.length,
      kind: 'file',
      storageKey,
    });
    await scheduleDocumentParse(tx, { id, workspaceId: tenant.workspaceId, filename });
  });
  return id;
}

/** The file's kind once its parse job has left the queue (done, or given up). */
export async function kindAfterParse(t: TestContext, fileId: string): Promise<string> {
  await waitUntil(async () => {
    const pending = await t.deps.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      select id::text from graphile_worker.jobs
      where task_identifier = 'files__parse' and key = ${`files:parse:${fileId}`}
    `);
    return pending.length === 0 ? true : undefined;
  }, 30_000);
  return t.deps.pool.oneFirst(sql.type(z.object({ kind: z.string() }))`
    select kind from files where id = ${fileId}
  `);
}

/** A supertest parser that keeps any response body as bytes (xlsx, pdf, pptx). */
export function binary(res: unknown, done: (err: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  const stream = res as NodeJS.ReadableStream;
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
}

/** GET /files/{fileId}/export in a binary `format` (pdf, xlsx, pptx) as `key`, its body kept as bytes. */
export const fileExport = (t: TestContext, key: string, fileId: string, format: string) =>
  t.http
    .get(api(`/files/${fileId}/export?format=${format}`))
    .set(bearer(key))
    .buffer(true)
    .parse(binary);
