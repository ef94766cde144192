import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import JSZip from 'jszip';
import { extractImages, extractText, getDocumentProxy } from 'unpdf';

import { findFileDocument } from '../../../shared/db/queries/fileDocuments.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { api, postAs, type TestContext } from '../../helpers/context.ts';
import {
  deckSlides,
  fileExport,
  kindAfterParse,
  makeDeckPptx,
  makeXlsx,
  storeFile,
} from '../../helpers/documents.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { waitForJob as waitForJobOf } from '../../helpers/jobs.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ worker: true })));
afterAll(() => t.close());

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
