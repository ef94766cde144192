import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import type { Response } from 'supertest';

import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { fileExport, kindAfterParse, makeDeckPptx, makeXlsx, storeFile } from '../../helpers/documents.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;
let stranger: Tenant;
const ids: Record<'page' | 'csv' | 'xlsx' | 'deck' | 'plain', string> = {
  page: '',
  csv: '',
  xlsx: '',
  deck: '',
  plain: '',
};

const csvText = 'name,note\r\n"Rice, long grain","says ""hi"""\r\nनेपाल,2\r\n';
const csvRows = [
  ['name', 'note'],
  ['Rice, long grain', 'says "hi"'],
  ['नेपाल', '2'],
];

beforeAll(async () => {
  t = await setupTestContext();
  [tenant, stranger] = await Promise.all([createTenant(t.deps.pool), createTenant(t.deps.pool)]);
  await t.startWorker();
  ids.page = await storeFile(
    t,
    tenant,
    'Report <v2>.html',
    Buffer.from('<!doctype html><title>R</title><script>alert(1)</script><p>Namaste नेपाल</p>'),
  );
  ids.csv = await storeFile(t, tenant, 'list.csv', Buffer.from(csvText));
  ids.xlsx = await storeFile(
    t,
    tenant,
    'budget.xlsx',
    await makeXlsx([
      ['item', 'cost'],
      ['tea', 3],
      ['chiya', 4.5],
    ]),
  );
  ids.deck = await storeFile(t, tenant, 'deck.pptx', await makeDeckPptx());
  ids.plain = await storeFile(t, tenant, 'notes.txt', Buffer.from('plain'));
  await Promise.all(Object.values(ids).map((id) => kindAfterParse(t, id)));
});
afterAll(() => t.close());

const exportOf = (fileId: string, format: string, key = tenant.testKey) => fileExport(t, key, fileId, format);

async function sheetRows(xlsx: Buffer): Promise<unknown[][]> {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(xlsx as unknown as ExcelJS.Buffer);
  const rows: unknown[][] = [];
  workbook.worksheets[0]!.eachRow((row) => rows.push((row.values as unknown[]).slice(1)));
  return rows;
}

function expectDownload(res: Response, contentType: string, filename: string) {
  expect(res.headers['content-type']).toBe(contentType);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['content-disposition']).toContain('attachment;');
  expect(res.headers['content-disposition']).toContain(`filename*=UTF-8''${encodeURIComponent(filename)}`);
}

describe('GET /files/{fileId}/export', () => {
  it('exports a page as its HTML, sandboxed so its script cannot run on our origin', async () => {
    const res = await exportOf(ids.page, 'html').expect(200);
    expectDownload(res, 'text/html; charset=utf-8', 'Report <v2>.html');
    expect(res.headers['content-disposition']).toContain('filename="Report <v2>.html"');
    expect(res.headers['content-security-policy']).toBe('sandbox');
    expect((res.body as Buffer).toString('utf8')).toContain('Namaste नेपाल');
  });

  it('exports a CSV sheet as CSV and as an xlsx workbook with the same rows', async () => {
    const csv = await exportOf(ids.csv, 'csv').expect(200);
    expectDownload(csv, 'text/csv; charset=utf-8', 'list.csv');
    expect(parse(csv.body as Buffer)).toEqual(csvRows);
    const xlsx = await exportOf(ids.csv, 'xlsx').expect(200);
    expectDownload(xlsx, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'list.xlsx');
    expect(await sheetRows(xlsx.body as Buffer)).toEqual(csvRows);
  });

  it('exports an xlsx sheet as xlsx and as CSV', async () => {
    const xlsx = await exportOf(ids.xlsx, 'xlsx').expect(200);
    expect(await sheetRows(xlsx.body as Buffer)).toEqual([
      ['item', 'cost'],
      ['tea', 3],
      ['chiya', 4.5],
    ]);
    const csv = await exportOf(ids.xlsx, 'csv').expect(200);
    expect(parse(csv.body as Buffer)).toEqual([
      ['item', 'cost'],
      ['tea', '3'],
      ['chiya', '4.5'],
    ]);
  });

  it('exports a deck as its pptx, and refuses its PDF until it is rendered', async () => {
    const pptx = await exportOf(ids.deck, 'pptx').expect(200);
    expectDownload(
      pptx,
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      'deck.pptx',
    );
    const zip = await JSZip.loadAsync(pptx.body as Buffer);
    expect(Object.keys(zip.files).filter((f) => /^ppt\/slides\/slide\d+\.xml$/.test(f))).toHaveLength(3);
    const pdf = await exportOf(ids.deck, 'pdf').expect(409);
    expect(JSON.parse((pdf.body as Buffer).toString()).error.code).toBe('export_not_rendered');
  });

  it('answers unsupported_export_format for a format the kind does not have', async () => {
    const pairs: [string, string][] = [
      [ids.page, 'csv'],
      [ids.page, 'pdf'],
      [ids.csv, 'html'],
      [ids.xlsx, 'pdf'],
      [ids.deck, 'xlsx'],
      [ids.plain, 'html'],
      [ids.plain, 'pdf'],
      [ids.csv, 'docx'],
    ];
    for (const [fileId, format] of pairs) {
      const res = await exportOf(fileId, format).expect(422);
      expect(JSON.parse((res.body as Buffer).toString()).error.code).toBe('unsupported_export_format');
    }
  });

  it("answers not_found for another workspace's file", async () => {
    const res = await exportOf(ids.page, 'html', stranger.testKey).expect(404);
    expect(JSON.parse((res.body as Buffer).toString()).error.code).toBe('not_found');
  });
});

describe('POST /files/{fileId}/render', () => {
  it('renders only decks', async () => {
    for (const fileId of [ids.page, ids.csv, ids.xlsx, ids.plain]) {
      const res = await postAs(t.http, tenant.testKey, `/files/${fileId}/render`).expect(422);
      expect(res.body.error.code).toBe('unsupported_export_format');
    }
  });

  it("answers not_found for another workspace's deck", async () => {
    const res = await postAs(t.http, stranger.testKey, `/files/${ids.deck}/render`).expect(404);
    expect(res.body.error.code).toBe('not_found');
  });
});
