import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import ExcelJS from 'exceljs';
import { extractText, getDocumentProxy } from 'unpdf';

import { api, bearer, type TestContext } from '../../helpers/context.ts';
import {
  deckSlides,
  fileExport,
  kindAfterParse,
  makeDeckPptx,
  makeXlsx,
  pptxType,
  xlsxType,
} from '../../helpers/documents.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

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
