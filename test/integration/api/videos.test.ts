import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { defaultPrices } from '../../../shared/config/prices.ts';
import { findFileById } from '../../../shared/db/queries/files.ts';
import { findVideo } from '../../../shared/db/queries/videos.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { probeVideo } from '../../helpers/ffprobe.ts';
import { createTenant, insertBareTask, type Tenant } from '../../helpers/fixtures.ts';
import { waitForJob as waitForJobOf } from '../../helpers/jobs.ts';

let t: TestContext;
let tenant: Tenant;
let other: Tenant;
let taskId: string;
let otherTaskId: string;

const newTask = (owner: Tenant) => insertBareTask(t.deps.pool, owner, 'Launch clip');

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 10_000 });
  other = await createTenant(t.deps.pool, { credits: 10_000 });
  taskId = await newTask(tenant);
  otherTaskId = await newTask(other);
});
afterAll(() => t.close());


const waitForJob = (id: string, key = tenant.liveKey) => waitForJobOf(t, id, key, 30_000);

const postVideo = (body: Record<string, unknown>, key = tenant.liveKey) =>
  t.http.post(api('/videos')).set(bearer(key)).send(body);

const download = (videoId: string, headers: Record<string, string> = {}, key = tenant.liveKey) =>
  t.http
    .get(api(`/videos/${videoId}/file`))
    .set({ ...bearer(key), ...headers })
    .buffer(true)
    // The body as bytes, whatever its type (superagent would otherwise leave video/mp4 unread).
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    });

const errorOf = (res: { body: Buffer }) =>
  (JSON.parse(res.body.toString('utf8')) as { error: { code: string } }).error;

const seconds = 2;
let live: { videoId: string; jobId: string; balanceBefore: number };
let whole: Buffer;

describe('POST /videos with a live key', () => {
  it('answers 202 with the video generating and its job; the file is not ready before the worker runs', async () => {
    const balanceBefore = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const res = await postVideo({
      taskId,
      prompt: 'A red fox: crossing a snowy field, at dawn; 100% "quoted" %{pts} [a],b',
      negativePrompt: 'blurry',
      durationSeconds: seconds,
    }).expect(202);
    expect(res.body).toEqual({
      video: {
        id: expect.stringMatching(/^vid_/),
        taskId,
        title: expect.stringContaining('A red fox'),
        status: 'generating',
        error: null,
        aspectRatio: '16:9',
        resolution: '720p',
        durationSeconds: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
      jobId: expect.stringMatching(/^job_/),
    });
    expect(res.headers.location).toBe(api(`/jobs/${res.body.jobId}`));
    live = { videoId: res.body.video.id, jobId: res.body.jobId, balanceBefore };
    // The maximum cost is held while the render runs.
    const held = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(held.reserved_minor).toBe(defaultPrices.videoPerSecond * seconds);

    // No worker yet: deterministically still generating.
    const notReady = await download(live.videoId).expect(409);
    expect(errorOf(notReady)).toMatchObject({ code: 'video_not_ready' });
    const read = await t.http
      .get(api(`/videos/${live.videoId}`))
      .set(bearer(tenant.liveKey))
      .expect(200);
    expect(read.body.video.status).toBe('generating');
  });

  it('renders a real H.264 MP4 of the requested shape and length once the worker runs', async () => {
    await t.startWorker();
    const job = await waitForJob(live.jobId);
    expect(job).toMatchObject({ status: 'succeeded', result: { videoId: live.videoId }, error: null });
    const read = await t.http
      .get(api(`/videos/${live.videoId}`))
      .set(bearer(tenant.liveKey))
      .expect(200);
    expect(read.body.video).toMatchObject({ status: 'ready', error: null, durationSeconds: seconds });

    const res = await download(live.videoId).expect(200);
    whole = res.body as Buffer;
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(Number(res.headers['content-length'])).toBe(whole.length);
    expect(res.headers.etag).toMatch(/^"file_/);
    expect(res.headers['last-modified']).toEqual(expect.any(String));
    // Inline, so never sniffed into a document or run, as files are.
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toBe('sandbox');
    const probed = await probeVideo(whole);
    expect(probed).toMatchObject({ codec: 'h264', width: 1280, height: 720, pixelFormat: 'yuv420p' });
    expect(Math.abs(probed.duration - seconds)).toBeLessThan(0.1);
  });

  it('bills exactly videoPerSecond × seconds, with a metering record and no hold left', async () => {
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(live.balanceBefore - after.balance_minor).toBe(defaultPrices.videoPerSecond * seconds);
    expect(after.reserved_minor).toBe(0);
    const records = await t.deps.pool.any(
      sql.type(
        z.object({
          operation: z.string(),
          usage: z.unknown(),
          cost_minor: z.number(),
          livemode: z.boolean(),
        }),
      )`select operation, usage, cost_minor, livemode from metering_records where job_id = ${live.jobId}`,
    );
    expect(records).toEqual([
      {
        operation: 'video.generate',
        usage: { seconds },
        cost_minor: defaultPrices.videoPerSecond * seconds,
        livemode: true,
      },
    ]);
  });

  it('stores the clip as a file of kind video on the task, counted in storage, announced as video.ready', async () => {
    const video = await findVideo(t.deps.pool, live.videoId);
    const file = await findFileById(t.deps.pool, video!.file_id!);
    expect(file).toMatchObject({
      kind: 'video',
      task_id: taskId,
      member_id: tenant.memberId,
      mime_type: 'video/mp4',
      size_bytes: whole.length,
    });
    const used = await t.deps.pool.oneFirst(sql.type(z.object({ storage_used_bytes: z.number() }))`
      select storage_used_bytes from workspaces where id = ${tenant.workspaceId}
    `);
    expect(used).toBeGreaterThanOrEqual(whole.length);
    const events = await t.deps.pool.any(sql.type(z.object({ type: z.string(), data: z.unknown() }))`
      select type, data from events
      where data->'video'->>'id' = ${live.videoId} or data->'job'->>'id' = ${live.jobId}
      order by created_at
    `);
    expect(events.map((e) => e.type).sort()).toEqual(['job.succeeded', 'video.ready']);
    expect(events.find((e) => e.type === 'video.ready')!.data).toMatchObject({
      video: { id: live.videoId, status: 'ready', durationSeconds: seconds },
    });
  });
});

describe('GET /videos/{videoId}/file ranges', () => {
  const range = async (header: string) => {
    const res = await download(live.videoId, { Range: header }).expect(206);
    return {
      bytes: res.body as Buffer,
      contentRange: res.headers['content-range'],
      length: res.headers['content-length'],
      nosniff: res.headers['x-content-type-options'],
      csp: res.headers['content-security-policy'],
    };
  };

  it('answers the first bytes, a middle slice, a suffix and an open-ended range byte-exact', async () => {
    const size = whole.length;
    expect(size).toBeGreaterThan(3000);
    const first = await range('bytes=0-99');
    expect(first.contentRange).toBe(`bytes 0-99/${size}`);
    expect(first.length).toBe('100');
    expect([first.nosniff, first.csp]).toEqual(['nosniff', 'sandbox']);
    expect(first.bytes.equals(whole.subarray(0, 100))).toBe(true);

    const middle = await range('bytes=1000-1999');
    expect(middle.contentRange).toBe(`bytes 1000-1999/${size}`);
    expect(middle.bytes.equals(whole.subarray(1000, 2000))).toBe(true);

    const suffix = await range('bytes=-500');
    expect(suffix.contentRange).toBe(`bytes ${size - 500}-${size - 1}/${size}`);
    expect(suffix.bytes.equals(whole.subarray(size - 500))).toBe(true);

    const open = await range(`bytes=${size - 300}-`);
    expect(open.contentRange).toBe(`bytes ${size - 300}-${size - 1}/${size}`);
    expect(open.bytes.equals(whole.subarray(size - 300))).toBe(true);

    // A last byte past the end is clamped to the end.
    const clamped = await range(`bytes=${size - 10}-${size + 1000}`);
    expect(clamped.bytes.equals(whole.subarray(size - 10))).toBe(true);
  });

  it('answers 416 with bytes */size for a range past the end', async () => {
    const res = await download(live.videoId, { Range: `bytes=${whole.length}-` }).expect(416);
    expect(res.headers['content-range']).toBe(`bytes */${whole.length}`);
    expect(errorOf(res)).toMatchObject({ code: 'range_not_satisfiable', requestId: expect.any(String) });
  });

  it('answers several ranges with the whole clip, and 304 to If-None-Match with the ETag', async () => {
    const several = await download(live.videoId, { Range: 'bytes=0-9,20-29' }).expect(200);
    expect((several.body as Buffer).equals(whole)).toBe(true);
    const first = await download(live.videoId).expect(200);
    await download(live.videoId, { 'If-None-Match': first.headers.etag! }).expect(304);
  });
});

describe('another workspace', () => {
  it("cannot start a video on a task it cannot see, nor read or download another's video", async () => {
    const create = await postVideo({ taskId, prompt: 'not mine' }, other.liveKey).expect(404);
    expect(create.body.error.code).toBe('not_found');
    await postVideo({ taskId: 'task_missing', prompt: 'nothing' }).expect(404);
    const read = await t.http
      .get(api(`/videos/${live.videoId}`))
      .set(bearer(other.liveKey))
      .expect(404);
    expect(read.body.error.code).toBe('not_found');
    const res = await download(live.videoId, {}, other.liveKey).expect(404);
    expect(errorOf(res).code).toBe('not_found');
    // Nor the other way round: the other workspace's own video on its own task.
    const theirs = await postVideo({ taskId: otherTaskId, prompt: 'theirs' }, other.testKey).expect(202);
    await t.http
      .get(api(`/videos/${theirs.body.video.id}`))
      .set(bearer(tenant.liveKey))
      .expect(404);
    await download(theirs.body.video.id).expect(404);
    await download(theirs.body.video.id, {}, other.testKey).expect(200);
  });
});

describe('POST /videos validation', () => {
  it('refuses an empty or too long prompt and a duration outside 1..60', async () => {
    const empty = await postVideo({ taskId, prompt: '' }).expect(422);
    expect(empty.body.error.code).toBe('invalid_generation_prompt');
    const long = await postVideo({ taskId, prompt: 'x'.repeat(2001) }).expect(422);
    expect(long.body.error.code).toBe('invalid_generation_prompt');
    const tooLong = await postVideo({ taskId, prompt: 'ok', durationSeconds: 61 }).expect(422);
    expect(tooLong.body.error.code).toBe('invalid_request_body');
    const missing = await postVideo({ prompt: 'ok' }).expect(422);
    expect(missing.body.error.code).toBe('invalid_request_body');
  });
});

describe('POST /videos with a test key', () => {
  it('answers a ready fixture at no cost, with a succeeded job, downloadable', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const res = await postVideo(
      { taskId, prompt: 'fixture please', aspectRatio: '9:16', durationSeconds: 30 },
      tenant.testKey,
    ).expect(202);
    expect(res.body.video).toMatchObject({
      status: 'ready',
      error: null,
      aspectRatio: '9:16',
      resolution: '720p',
      durationSeconds: 1,
    });
    const job = await waitForJob(res.body.jobId, tenant.testKey);
    expect(job).toMatchObject({ status: 'succeeded', result: { videoId: res.body.video.id } });
    const file = await download(res.body.video.id, {}, tenant.testKey).expect(200);
    const probed = await probeVideo(file.body as Buffer);
    expect(probed).toMatchObject({ codec: 'h264', width: 720, height: 1280 });
    const part = await download(res.body.video.id, { Range: 'bytes=0-9' }, tenant.testKey).expect(206);
    expect((part.body as Buffer).equals((file.body as Buffer).subarray(0, 10))).toBe(true);
    expect((await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor).toBe(before);
    const cost = await t.deps.pool.oneFirst(sql.type(z.object({ cost_minor: z.number() }))`
      select cost_minor from metering_records where job_id = ${res.body.jobId as string}
    `);
    expect(cost).toBe(0);
  });
});

describe('Idempotency-Key on POST /videos', () => {
  it('replays the first answer and creates one video', async () => {
    const key = `video-${newId('k')}`;
    const body = { taskId, prompt: 'once only', durationSeconds: 1 };
    const first = await postVideo(body).set('Idempotency-Key', key).expect(202);
    const again = await postVideo(body).set('Idempotency-Key', key).expect(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const count = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from videos where title = 'once only' and workspace_id = ${tenant.workspaceId}
    `);
    expect(count).toBe(1);
    const job = await waitForJob(first.body.jobId);
    expect(job.status).toBe('succeeded');
  });
});

describe('a 1080p upright render', () => {
  it('is 1080×1920', async () => {
    const res = await postVideo({
      taskId,
      prompt: 'upright',
      aspectRatio: '9:16',
      resolution: '1080p',
      durationSeconds: 1,
    }).expect(202);
    await waitForJob(res.body.jobId);
    const file = await download(res.body.video.id).expect(200);
    const probed = await probeVideo(file.body as Buffer);
    expect(probed).toMatchObject({ codec: 'h264', width: 1080, height: 1920 });
    expect(Math.abs(probed.duration - 1)).toBeLessThan(0.1);
  });
});
