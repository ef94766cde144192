import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { ocrProbe } from '../../../worker/probes.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitForJob as waitForJobOf } from '../../helpers/jobs.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { renderTextPng } from '../../helpers/textImage.ts';
import { workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;
let store: ObjectStore;

const english = ['Invoice 2041 paid in full', 'Thank you for your business'];
const nepali = ['नेपाल सरकार', 'काठमाडौं महानगरपालिका'];
let englishPng: string;
let nepaliPng: string;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ credits: 10_000 }));
  store = new ObjectStore(t.s3);
  englishPng = renderTextPng(english, 'latin').toString('base64');
  nepaliPng = renderTextPng(nepali, 'devanagari').toString('base64');
  await t.startWorker();
});
afterAll(() => t.close());


const waitForJob = (id: string, key = tenant.liveKey) => waitForJobOf(t, id, key, 30_000);

async function ocrObjects(): Promise<string[]> {
  for (let i = 0; ; i++) {
    const names: string[] = [];
    for await (const item of store.client.listObjectsV2(store.bucket, 'job-inputs/ocr/', true)) {
      names.push((item as { name: string }).name);
    }
    if (names.length === 0 || i >= 40) return names;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const post = (body: Record<string, unknown>, key = tenant.liveKey) =>
  t.http.post(api('/ocr')).set(bearer(key)).send(body);

/** POSTs `data` as a PNG named `filename`, with this language hint. */
const postPng = (data: string, filename: string, languageHint: string) =>
  post({ data, mimeType: 'image/png', filename, languageHint });

describe('POST /ocr', () => {
  it('answers a test key with an already succeeded fixture job, announced and free', async () => {
    const res = await post({ data: englishPng, mimeType: 'image/png' }, tenant.testKey).expect(202);
    expect(res.body.job).toEqual({
      id: expect.stringMatching(/^job_/),
      type: 'ocr.extract',
      status: 'succeeded',
      result: { text: 'Test mode OCR text.', pages: 1, languages: ['en'], model: 'svc-test-fixture' },
      error: null,
      createdAt: expect.any(String),
      completedAt: expect.any(String),
    });
    expect(res.headers.location).toBe(api(`/jobs/${res.body.job.id}`));
    const read = await t.http
      .get(api(`/jobs/${res.body.job.id}`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(read.body.job).toEqual(res.body.job);
    const events = await t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
      select type from events where data->'job'->>'id' = ${res.body.job.id as string}
    `);
    expect(events).toEqual(['job.succeeded']);
    expect(await ocrObjects()).toEqual([]);
  });

  it('reads English text from a generated PNG with a live key, billed per page', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const res = await postPng(englishPng, 'invoice.png', 'en').expect(202);
    expect(res.body.job).toMatchObject({
      type: 'ocr.extract',
      status: 'queued',
      result: null,
      error: null,
      completedAt: null,
    });
    const job = await waitForJob(res.body.job.id);
    expect(job).toMatchObject({
      status: 'succeeded',
      result: { text: english.join('\n'), pages: 1, languages: ['en'], model: 'tesseract-5-lstm' },
      completedAt: expect.any(String),
    });
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(before - after.balance_minor).toBe(1);
    expect(after.reserved_minor).toBe(0);
    const events = await t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
      select type from events where data->'job'->>'id' = ${job.id}
    `);
    expect(events).toEqual(['job.succeeded']);
    expect(await ocrObjects()).toEqual([]);
  });

  it('reads Devanagari (Nepali) text from a generated PNG', async () => {
    const res = await post({ data: nepaliPng, mimeType: 'image/png', languageHint: 'ne' }).expect(202);
    const job = await waitForJob(res.body.job.id);
    expect(job.result).toEqual({
      text: nepali.join('\n'),
      pages: 1,
      languages: ['ne'],
      model: 'tesseract-5-lstm',
    });
  });

  it('decides the language from the filename with auto, and reads both scripts without a clue', async () => {
    const byName = await postPng(nepaliPng, 'suchana_ne.png', 'auto').expect(202);
    expect((await waitForJob(byName.body.job.id)).result).toMatchObject({
      text: nepali.join('\n'),
      languages: ['ne'],
    });
    const noClue = await post({ data: englishPng, mimeType: 'image/png', filename: 'scan.png' }).expect(202);
    expect((await waitForJob(noClue.body.job.id)).result).toMatchObject({
      text: english.join('\n'),
      languages: ['en', 'ne'],
    });
  });

  it('fails a job whose bytes are not an image it can read, releasing the hold', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n').toString('base64');
    const res = await post({ data: pdf, mimeType: 'application/pdf', filename: 'scan.pdf' }).expect(202);
    const job = await waitForJob(res.body.job.id);
    expect(job).toMatchObject({
      status: 'failed',
      result: null,
      error: { code: 'unsupported_media_type', message: expect.stringMatching(/PNG, JPEG/) },
    });
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(after).toMatchObject({ balance_minor: before, reserved_minor: 0 });
    expect(await ocrObjects()).toEqual([]);
  });
});

describe('POST /ocr errors', () => {
  it.each([
    ['data that is not base64', 'invalid_request_body', { data: 'not base64!', mimeType: 'image/png' }],
    ['base64 with a broken length', 'invalid_request_body', { data: 'QUJDRA=', mimeType: 'image/png' }],
    ['empty data', 'invalid_request_body', { data: '', mimeType: 'image/png' }],
    ['a missing mimeType', 'invalid_request_body', { data: 'QUJD' }],
    ['an empty mimeType', 'invalid_request_body', { data: 'QUJD', mimeType: '' }],
    [
      'a filename over 255 characters',
      'invalid_request_body',
      { data: 'QUJD', mimeType: 'image/png', filename: 'f'.repeat(256) },
    ],
    [
      'an unknown languageHint',
      'invalid_request_body',
      { data: 'QUJD', mimeType: 'image/png', languageHint: 'fr' },
    ],
    ['numeric data', 'invalid_request_body', { data: 42, mimeType: 'image/png' }],
  ])('rejects %s with %s', async (_name, code, body) => {
    const res = await post(body).expect(422);
    expect(res.body.error.code).toBe(code);
  });

  it('names the data field when it is not base64', async () => {
    const res = await post({ data: '@@@@', mimeType: 'image/png' }).expect(422);
    expect(res.body.error.issues).toEqual([{ path: 'data', message: 'must be base64-encoded file bytes' }]);
  });

  it('reads the content, not the label: an executable or a text sent as an image is refused, no job made', async () => {
    const jobsBefore = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from jobs where workspace_id = ${tenant.workspaceId}
    `);
    const elf = Buffer.concat([Buffer.from('7f454c4602010100', 'hex'), Buffer.alloc(8192, 1)]);
    for (const [bytes, key] of [
      [elf, tenant.liveKey],
      [elf, tenant.testKey],
      [Buffer.from('just some words, no picture'), tenant.liveKey],
    ] as const) {
      const res = await post({ data: bytes.toString('base64'), mimeType: 'image/png' }, key).expect(422);
      expect(res.body.error).toMatchObject({
        code: 'invalid_request_body',
        issues: [{ path: 'data', message: 'must be an image or a PDF' }],
      });
    }
    expect(
      await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from jobs where workspace_id = ${tenant.workspaceId}
      `),
    ).toBe(jobsBefore);
  });

  it('answers file_too_large above 20 MiB of decoded data', async () => {
    const data = Buffer.alloc(20 * 1024 * 1024 + 3, 7).toString('base64');
    const res = await post({ data, mimeType: 'image/png' }).expect(413);
    expect(res.body.error.code).toBe('file_too_large');
  });

  it('answers project_id_required, insufficient_credits and key_spend_limit_reached', async () => {
    const other = await tenant.addProject('OCR');
    const multi = await tenant.key({ projectIds: [tenant.projectId, other] });
    expect(
      (await post({ data: englishPng, mimeType: 'image/png' }, multi.secret).expect(422)).body.error.code,
    ).toBe('project_id_required');
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    expect(
      (await post({ data: englishPng, mimeType: 'image/png' }, broke.liveKey).expect(402)).body.error.code,
    ).toBe('insufficient_credits');
    const capped = await tenant.key({ monthlySpendCapMinor: 0 });
    expect(
      (await post({ data: englishPng, mimeType: 'image/png' }, capped.secret).expect(402)).body.error.code,
    ).toBe('key_spend_limit_reached');
    expect(await ocrObjects()).toEqual([]);
  });
});

describe('OCR status probe', () => {
  it('is registered: the worker records an ocr sample at boot, shown by GET /status', async () => {
    let ocr: { state: string; latencyMs: number | null } | undefined;
    for (let i = 0; i < 100 && (ocr === undefined || ocr.state === 'unknown'); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 200));
      const res = await t.http.get(api('/status')).expect(200);
      ocr = (res.body.components as { component: string; state: string; latencyMs: number | null }[]).find(
        (c) => c.component === 'ocr',
      );
    }
    expect(ocr).toMatchObject({ state: 'operational', latencyMs: expect.any(Number) });
  });

  it('reports operational when the engine reads its probe image back', async () => {
    const result = await ocrProbe(workerContextFor(t), new AbortController().signal);
    expect(result).toEqual({ state: 'operational', latencyMs: expect.any(Number) });
  });
});
