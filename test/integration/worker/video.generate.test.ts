import { readdir } from 'node:fs/promises';
import os from 'node:os';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findJob } from '../../../shared/db/queries/jobs.ts';
import { findVideo } from '../../../shared/db/queries/videos.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { cancelJob } from '../../../shared/jobs/cancelJob.ts';
import { ProviderError } from '../../../shared/providers/types.ts';
import { videoObjectKey } from '../../../shared/videos/dto.ts';
import type { WorkerContext } from '../../../worker/context.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { videoGenerate } from '../../../worker/tasks/video__generate.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { insertBareTask, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;
let taskId: string;
let ctx: WorkerContext;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ credits: 10_000 }));
  taskId = await insertBareTask(t.deps.pool, tenant, 'Clips');
  ctx = workerContextFor(t);
});
afterAll(async () => {
  await ctx.close();
  await t.close();
});

async function startVideo(body: Record<string, unknown>) {
  const res = await postAs(t.http, tenant.liveKey, '/videos')
    .send({ taskId, ...body })
    .expect(202);
  return { videoId: res.body.video.id as string, jobId: res.body.jobId as string };
}

const runVideoJobs = (context: WorkerContext) =>
  runDueJobs(t, { video__generate: jobTask(context, videoGenerate(context)) });

const scratchDirsOf = async (videoId: string) =>
  (await readdir(os.tmpdir())).filter((n) => n.startsWith(`svc-video-${videoId}-`));

describe('video__generate', () => {
  it('marks the video failed, bills nothing and keeps no bytes when the provider refuses', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    const { videoId, jobId } = await startVideo({ prompt: 'refused', durationSeconds: 3 });
    const refusing: WorkerContext = {
      ...ctx,
      providers: (livemode) => ({
        ...ctx.providers(livemode),
        video: { render: () => Promise.reject(new ProviderError('no video here', false)) },
      }),
    };
    await runVideoJobs(refusing);
    const job = (await findJob(t.deps.pool, jobId))!;
    expect(job.status).toBe('failed');
    expect(job.error).toMatchObject({ code: 'internal_error' });
    expect(await findVideo(t.deps.pool, videoId)).toMatchObject({
      status: 'failed',
      error: 'The video could not be rendered.',
      file_id: null,
      duration_seconds: null,
    });
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(after).toEqual(before);
    const res = await t.http
      .get(api(`/videos/${videoId}/file`))
      .set(bearer(tenant.liveKey))
      .expect(409);
    expect(res.body.error.code).toBe('video_not_ready');
    expect(await t.deps.objectStore.stat(videoObjectKey(tenant.workspaceId, videoId))).toBeUndefined();
    const events = await t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
      select type from events where data->'job'->>'id' = ${jobId} or data->'video'->>'id' = ${videoId}
    `);
    expect(events).toEqual(['job.failed']);
  });

  it('kills ffmpeg when the job is cancelled: no wait for the render, nothing billed, no temp files left', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    // A minute at 1080p takes ffmpeg far longer than this test allows (about 25 s here).
    const { videoId, jobId } = await startVideo({ prompt: 'long', durationSeconds: 60, resolution: '1080p' });
    const started = Date.now();
    const run = runVideoJobs(ctx);
    // The render has begun once its scratch directory exists; ffmpeg starts right after.
    for (let i = 0; i < 200 && (await scratchDirsOf(videoId)).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(await scratchDirsOf(videoId)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 300));
    await cancelJob(t.deps.pool, jobId);
    await run;
    expect(Date.now() - started).toBeLessThan(10_000);
    const job = (await findJob(t.deps.pool, jobId))!;
    expect(job.status).toBe('cancelled');
    const video = await findVideo(t.deps.pool, videoId);
    expect(video).toMatchObject({ status: 'failed', error: 'The render was cancelled.' });
    // Ended in the job's own transaction (now() is the transaction's time): no crash can leave the
    // job cancelled and its video generating.
    expect(new Date(video!.updated_at).getTime()).toBe(new Date(job.completed_at!).getTime());
    expect((await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!).toEqual(before);
    expect(await scratchDirsOf(videoId)).toEqual([]);
  });
});
