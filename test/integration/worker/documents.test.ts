import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { extractImages, extractText, getDocumentProxy } from 'unpdf';

import { findFileDocument } from '../../../shared/db/queries/fileDocuments.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import {
  deckSlides,
  fileExport,
  kindAfterParse,
  makeDeckPptx,
  makeXlsx,
  pptxType,
  storeFile,
  xlsxType,
} from '../../helpers/documents.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { waitForJob as waitForJobOf } from '../../helpers/jobs.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

// Native documents (.pptx, .xlsx, .csv, .html): made through POST /files, parsed into their kind by
// files__parse, rendered by deck__export, and exported.
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ worker: true })));
afterAll(() => t.close());

describe('native documents uploaded through the API', () => {
  it('makes a deck of a .pptx sent to POST /files, renders it and exports its PDF', async () => {
    const upload = await t.http
      .post(api('/files'))
      .set(bearer(tenant.liveKey))
      .attach('file', await makeDeckPptx(), { filename: 'review.pptx', contentType: pptxType })
      .expect(201);
    const fileId = upload.body.file.id as string;
    expect(await kindAfterParse(t, fileId)).toBe('deck');
    const read = await t.http.get(api(`/files/${fileId}`)).set(bearer(tenant.liveKey)).expect(200);
    expect(read.body.file.kind).toBe('deck');
    const early = await t.http.get(api(`/files/${fileId}/export?format=pdf`)).set(bearer(tenant.liveKey));
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('export_not_rendered');
    const render = await t.http.post(api(`/files/${fileId}/render`)).set(bearer(tenant.liveKey)).expect(202);
    const jobId = render.body.job.id as string;
    const job = await waitUntil(async () => {
      const res = await t.http.get(api(`/jobs/${jobId}`)).set(bearer(tenant.liveKey));
      return ['succeeded', 'failed'].includes(res.body.job.status) ? res.body.job : undefined;
    }, 60_000);
    expect(job.status).toBe('succeeded');
    const pdf = await fileExport(t, tenant.liveKey, fileId, 'pdf').expect(200);
    const doc = await getDocumentProxy(new Uint8Array(pdf.body as Buffer));
    const { totalPages, text } = await extractText(doc, { mergePages: false });
    expect(totalPages).toBe(deckSlides.length);
    deckSlides.forEach(([title], i) => expect(text[i]).toContain(title));
  }, 90_000);

  it('makes a sheet of an .xlsx sent through a presigned upload, and exports it as csv', async () => {
    const bytes = await makeXlsx([
      ['item', 'cost'],
      ['tea', 3],
    ]);
    const created = await t.http
      .post(api('/files/uploads'))
      .set(bearer(tenant.liveKey))
      .send({ filename: 'budget.xlsx', mimeType: xlsxType, sizeBytes: bytes.length })
      .expect(201);
    const { sessionId, parts } = created.body.upload as { sessionId: string; parts: { url: string }[] };
    const put = await fetch(parts[0]!.url, { method: 'PUT', body: bytes });
    const done = await t.http
      .post(api(`/files/uploads/${sessionId}/complete`))
      .set(bearer(tenant.liveKey))
      .send({ parts: [{ partNumber: 1, etag: put.headers.get('etag') }] })
      .expect(201);
    const fileId = done.body.file.id as string;
    expect(await kindAfterParse(t, fileId)).toBe('sheet');
    const csv = await t.http.get(api(`/files/${fileId}/export?format=csv`)).set(bearer(tenant.liveKey)).expect(200);
    expect(csv.text.trim().split(/\r?\n/)).toEqual(['item,cost', 'tea,3']);
    const xlsx = await fileExport(t, tenant.liveKey, fileId, 'xlsx').expect(200);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx.body as unknown as ExcelJS.Buffer);
    expect(workbook.worksheets[0]!.getRow(2).values).toEqual([undefined, 'tea', 3]);
  }, 60_000);
});

describe('files__parse', () => {
  it('turns each native document into its kind once its bytes parse', async () => {
    const ids = await Promise.all([
      storeFile(t, tenant, 'Home.HTML', Buffer.from('<!doctype html><title>Hi</title><p>Namaste</p>')),
      storeFile(t, tenant, 'list.csv', Buffer.from('name,qty\r\n"Rice, long",2\r\nDal,1\r\n')),
      storeFile(
        t,
        tenant,
        'budget.xlsx',
        await makeXlsx([
          ['item', 'cost'],
          ['tea', 3],
        ]),
      ),
      storeFile(t, tenant, 'deck.pptx', await makeDeckPptx()),
      storeFile(t, tenant, 'notes.txt', Buffer.from('plain')),
    ]);
    const kinds = await Promise.all(ids.map((id) => kindAfterParse(t, id)));
    expect(kinds).toEqual(['page', 'sheet', 'sheet', 'deck', 'file']);
  });

  it('leaves a file that does not parse as kind file', async () => {
    const zipOfNothing = Buffer.from('PK\u0005\u0006' + '\u0000'.repeat(18), 'binary');
    const ids = await Promise.all([
      storeFile(t, tenant, 'broken.pptx', Buffer.from('this is not a zip')),
      storeFile(t, tenant, 'broken.xlsx', zipOfNothing),
      storeFile(t, tenant, 'binary.html', Buffer.from([0xff, 0xfe, 0x00, 0x41])),
      storeFile(t, tenant, 'bad.csv', Buffer.from('a,"unclosed\n')),
    ]);
    const kinds = await Promise.all(ids.map((id) => kindAfterParse(t, id)));
    expect(kinds).toEqual(['file', 'file', 'file', 'file']);
  });
});

const waitForJob = (id: string) => waitForJobOf(t, id, tenant.testKey, 60_000);

const render = (fileId: string) => postAs(t.http, tenant.testKey, `/files/${fileId}/render`);

describe('deck__export', () => {
  it("renders one PDF page per slide with each slide's text, Nepali included; a second render is a no-op", async () => {
    const pptx = await makeDeckPptx();
    expect(
      Object.keys((await JSZip.loadAsync(pptx)).files).filter((f) => /^ppt\/slides\/slide\d+\.xml$/.test(f)),
    ).toHaveLength(3);
    const fileId = await storeFile(t, tenant, 'Review.pptx', pptx);
    expect(await kindAfterParse(t, fileId)).toBe('deck');

    const first = await render(fileId).expect(202);
    expect(first.body.job).toMatchObject({ type: 'deck.export', status: 'queued', result: null });
    expect(first.headers.location).toBe(api(`/jobs/${first.body.job.id}`));
    expect(await waitForJob(first.body.job.id)).toMatchObject({
      status: 'succeeded',
      result: { fileId, pages: 3 },
    });

    const exported = await fileExport(t, tenant.testKey, fileId, 'pdf').expect(200);
    expect(exported.headers['content-type']).toBe('application/pdf');
    expect(exported.headers['content-disposition']).toContain("filename*=UTF-8''Review.pdf");
    // The faces Chromium embedded: the slides' DejaVu Sans and, for the Nepali line, Noto Sans
    // Devanagari, never a fallback (fontconfig aliases every generic family to these).
    const embedded = new Set(
      [
        ...(exported.body as Buffer)
          .toString('latin1')
          .matchAll(/\/BaseFont\s*\/(?:[A-Z]{6}\+)?([A-Za-z-]+)/g),
      ].map((m) => m[1]!.replace(/-.*$/, '')),
    );
    expect([...embedded].sort()).toEqual(['DejaVuSans', 'NotoSansDevanagari']);
    const pdf = await getDocumentProxy(new Uint8Array(exported.body as Buffer));
    const { totalPages, text } = await extractText(pdf, { mergePages: false });
    expect(totalPages).toBe(3);
    for (const [i, lines] of deckSlides.entries()) {
      for (const line of lines) expect(text[i]).toContain(line);
    }
    // The slide size (16:9, 10 × 5.625 in = 720 × 405 pt; Chromium rounds page sizes to its own
    // units), and the picture on the second slide only.
    const [, , width, height] = (await pdf.getPage(1)).view as number[];
    expect(width).toBeCloseTo(720, 0);
    expect(height).toBeCloseTo(405, 0);
    expect(await extractImages(pdf, 1)).toHaveLength(0);
    expect(await extractImages(pdf, 2)).toHaveLength(1);

    const store = new ObjectStore(t.s3);
    const doc = (await findFileDocument(t.deps.pool, fileId))!;
    const before = await store.stat(doc.pdf_key!);

    const second = await render(fileId).expect(202);
    expect(second.body.job.id).not.toBe(first.body.job.id);
    expect(await waitForJob(second.body.job.id)).toMatchObject({
      status: 'succeeded',
      result: { fileId, pages: 3 },
    });
    const after = (await findFileDocument(t.deps.pool, fileId))!;
    expect(after.pdf_key).toBe(doc.pdf_key);
    expect(await store.stat(doc.pdf_key!)).toEqual(before);
  });
});
