import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { reserveCredits } from '../../../shared/billing/metering.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createJob } from '../../../shared/jobs/createJob.ts';
import { inputObjectKey } from '../../../shared/jobs/generationInputs.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { encodePng } from '../../../shared/providers/png.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { renderDigitsPng } from '../../../worker/providers/bitmapText.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, principalFor, type Tenant } from '../../helpers/fixtures.ts';
import { webpLossy } from '../../helpers/imageHeaders.ts';
import { renderNoisePng } from '../../helpers/textImage.ts';
import { waitUntil } from './tasks.helpers.ts';

/**
 * OCR limits against the real api and the real worker (its OCR runner, two tesseract engines, an
 * 8 s recognition timeout, two slots on the main runner): the pixel limit at both ends, the timeout
 * as a public, permanent job error, two OCR jobs read at once, and OCR that cannot hold up the main
 * runner's billed work. Orderings are read from the jobs' own timestamps.
 */
let t: TestContext;
let tenant: Tenant;
let store: ObjectStore;
const timeoutMs = 8000;
// A real, decodable 8000 × 6000 PNG: 48 megapixels in about 140 KB.
const huge = encodePng(8000, 6000, () => [255, 255, 255]);
// Takes tesseract far longer than the timeout (about 40 s on an idle core).
const noise = renderNoisePng(2000);
const digits = renderDigitsPng('4711');

beforeAll(async () => {
  t = await setupTestContext({
    OCR_ENGINES: '2',
    OCR_TIMEOUT_MS: String(timeoutMs),
    WORKER_CONCURRENCY: '2',
  });
  tenant = await createTenant(t.deps.pool, { credits: 10_000 });
  store = new ObjectStore(t.s3);
  await t.startWorker();
});
afterAll(() => t.close());

const jobRow = z.object({
  id: z.string(),
  type: z.string(),
  status: z.string(),
  error: z.unknown(),
  /** completed_at in epoch milliseconds, microseconds kept as a fraction. */
  completed_ms: z.number().nullable(),
});
const jobColumns = sql.fragment`id, type, status, error, extract(epoch from completed_at)::float8 * 1000 as completed_ms`;

const findJob = (id: string) =>
  t.deps.pool.one(sql.type(jobRow)`
  select ${jobColumns} from jobs where id = ${id}
`);

const jobsOf = (workspaceId: string, type: string) =>
  t.deps.pool.any(sql.type(jobRow)`
  select ${jobColumns} from jobs
  where workspace_id = ${workspaceId} and type = ${type} order by created_at
`);

/** The job once it has ended. */
const finished = (id: string, timeout = 90_000) =>
  waitUntil(
    async () => {
      const job = await findJob(id);
      return ['succeeded', 'failed', 'cancelled'].includes(job.status) ? job : undefined;
    },
    timeout,
    100,
  );

/**
 * Resolves once graphile-worker's job for our job is gone: completed, not kept for a retry (a
 * retried job stays in its table, unlocked or failed, and never goes away on its own).
 */
const noAttemptLeft = (jobId: string) =>
  waitUntil(async () => {
    const left = await t.deps.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      select count(*)::int from graphile_worker.jobs q join jobs j on j.queue_job_id = q.id
      where j.id = ${jobId}
    `);
    return left === 0 ? true : undefined;
  }, 10_000);

const jobEvents = (jobId: string) =>
  t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
    select type from events where data->'job'->>'id' = ${jobId} order by created_at
  `);

const postOcr = (data: Buffer, key = tenant.liveKey) =>
  postAs(t.http, key, '/ocr').send({
    data: data.toString('base64'),
    mimeType: 'image/png',
    languageHint: 'en',
  });

async function ocrObjects(): Promise<string[]> {
  const names: string[] = [];
  for await (const item of store.client.listObjectsV2(store.bucket, 'job-inputs/ocr/', true)) {
    names.push((item as { name: string }).name);
  }
  return names;
}

describe('OCR pixel limit', () => {
  it('refuses an image over 40 megapixels at the api with file_too_large, storing nothing', async () => {
    const other = await createTenant(t.deps.pool);
    for (const key of [other.liveKey, other.testKey]) {
      const res = await postOcr(huge, key).expect(413);
      expect(res.body.error).toEqual({
        code: 'file_too_large',
        message: 'The image is 8000×6000 pixels (48 megapixels); OCR reads at most 40 megapixels.',
        requestId: expect.stringMatching(/^req_/),
      });
    }
    // Any format the engine reads: a WebP header declaring 16383 × 9000.
    const webp = await postOcr(webpLossy(16_383, 9_000), other.liveKey).expect(413);
    expect(webp.body.error.message).toMatch(/16383×9000 pixels \(147\.4 megapixels\)/);
    expect(await jobsOf(other.workspaceId, 'ocr.extract')).toEqual([]);
    expect(await ocrObjects()).toEqual([]);
    expect((await findWorkspaceBalance(t.deps.pool, other.workspaceId))!.reserved_minor).toBe(0);
  });

  it('fails a job whose image is over the limit in the worker at once and for good, releasing its hold', async () => {
    // As if the api had let it through (an older api, a job made another way): the worker checks too.
    const principal = await principalFor(t.deps.pool, tenant.liveKey);
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const objectKey = inputObjectKey('ocr', newId('ocr'));
    await store.put(objectKey, huge, huge.length, 'image/png');
    const job = await t.deps.pool.transaction(async (tx) => {
      const hold = await reserveCredits(tx, {
        principal,
        projectId: tenant.projectId,
        operation: 'ocr.extract',
        maxCostMinor: 1,
        requestId: 'req_test',
      });
      return createJob(tx, {
        type: 'ocr.extract',
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        keyId: principal.keyId,
        livemode: true,
        input: { objectKey, mimeType: 'image/png', languageHint: 'en', sizeBytes: huge.length },
        holdId: hold!.holdId,
        requestId: 'req_test',
      });
    });
    const ended = await finished(job.id);
    expect(ended).toMatchObject({
      status: 'failed',
      error: {
        code: 'file_too_large',
        message: 'The image is 8000×6000 pixels (48 megapixels); OCR reads at most 40 megapixels.',
      },
    });
    // Not retried: no attempt left queued, one job.failed, nothing charged or held.
    await noAttemptLeft(job.id);
    expect(await jobEvents(job.id)).toEqual(['job.failed']);
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: before,
      reserved_minor: 0,
    });
    await waitUntil(async () => ((await ocrObjects()).includes(objectKey) ? undefined : true));
  });
});

describe('OCR timeout and engines', () => {
  it('fails a recognition past OCR_TIMEOUT_MS with a public error, for good, and the next job reads', async () => {
    const res = await postOcr(noise).expect(202);
    const job = await finished(res.body.job.id);
    expect(job).toMatchObject({
      status: 'failed',
      error: {
        code: 'file_too_large',
        message:
          'OCR did not finish within 8 seconds: the image is too large or too detailed to read in time. Send it smaller or cropped.',
      },
    });
    await noAttemptLeft(job.id);
    expect(await jobEvents(job.id)).toEqual(['job.failed']);
    const read = await t.http
      .get(api(`/jobs/${job.id}`))
      .set(bearer(tenant.liveKey))
      .expect(200);
    expect(read.body.job.error).toEqual(job.error);

    const next = await postOcr(digits).expect(202);
    expect(await finished(next.body.job.id)).toMatchObject({ status: 'succeeded' });
  });

  it('reads two OCR jobs at once with two engines: a quick one does not wait for a slow one', async () => {
    const slow = await postOcr(noise).expect(202);
    const quick = await postOcr(digits).expect(202);
    const quickJob = await finished(quick.body.job.id);
    const slowJob = await finished(slow.body.job.id);
    // The quick job, queued second, was done before the slow one gave up.
    expect(quickJob.completed_ms!).toBeLessThan(slowJob.completed_ms!);
    expect(quickJob.status).toBe('succeeded');
    expect(slowJob).toMatchObject({ status: 'failed', error: { code: 'file_too_large' } });
  });

  it('never holds up billed work on the main runner, however many OCR jobs wait', async () => {
    // More slow OCR jobs than the main runner has slots (WORKER_CONCURRENCY=2).
    const backlog = await createTenant(t.deps.pool, { credits: 1000 });
    for (let i = 0; i < 3; i++) await postOcr(noise, backlog.liveKey).expect(202);
    await waitUntil(async () => {
      const jobs = await jobsOf(backlog.workspaceId, 'ocr.extract');
      return jobs.filter((j) => j.status === 'running').length === 2 ? true : undefined;
    });
    const other = await createTenant(t.deps.pool, { credits: 1000 });
    await postAs(t.http, other.liveKey, '/images').send({ prompt: 'A lighthouse at dusk' }).expect(201);
    const [image] = await jobsOf(other.workspaceId, 'images.generate');
    expect(image).toMatchObject({ status: 'succeeded', completed_ms: expect.any(Number) });
    // Every OCR job of the backlog was still unfinished when the image job finished.
    const ocrJobs = await jobsOf(backlog.workspaceId, 'ocr.extract');
    expect(ocrJobs).toHaveLength(3);
    const doneBefore = ocrJobs.filter(
      (j) => j.completed_ms !== null && j.completed_ms < image!.completed_ms!,
    );
    expect(doneBefore).toEqual([]);
  });
});
