import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { makeWav } from '../../helpers/audio.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let store: ObjectStore;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ credits: 100_000 }));
  store = new ObjectStore(t.s3);
  await t.startWorker();
});
afterAll(() => t.close());

function meteringFor(requestId: string) {
  return t.deps.pool.any(sql.type(
    z.object({ cost_minor: z.number(), usage: z.record(z.string(), z.number()), operation: z.string() }),
  )`
    select cost_minor, usage, operation from metering_records where request_id = ${requestId}
  `);
}

async function listAudioObjects(): Promise<string[]> {
  const names: string[] = [];
  for await (const item of store.client.listObjectsV2(store.bucket, 'job-inputs/audio/', true)) {
    names.push((item as { name: string }).name);
  }
  return names;
}

/** Uploaded audio left in storage, once the worker had a moment: it removes an input after the job's commit. */
async function audioObjects(): Promise<string[]> {
  for (let i = 0; i < 40; i++) {
    const names = await listAudioObjects();
    if (names.length === 0) return names;
    await new Promise((r) => setTimeout(r, 50));
  }
  return listAudioObjects();
}

const pngMagic = (b64: string) => Buffer.from(b64, 'base64').subarray(0, 8).toString('hex');

describe('POST /images', () => {
  it('answers a test key with a fixture PNG of the asked aspect ratio at no cost', async () => {
    const res = await postAs(t.http, tenant.testKey, '/images')
      .send({ prompt: 'a red fox', aspectRatio: '16:9' })
      .expect(201);
    expect(res.body).toEqual({
      image: { b64: expect.any(String), mimeType: 'image/png' },
      model: 'svc-test-fixture',
      usage: { inputTokens: 3, outputTokens: 0 },
      cost: { amount: 0, currency: 'USD' },
    });
    const png = Buffer.from(res.body.image.b64, 'base64');
    expect(pngMagic(res.body.image.b64)).toBe('89504e470d0a1a0a');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([64, 36]);
  });

  it('answers a live key with the local stand-in (default aspect 1:1), billed per image', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
    const res = await postAs(t.http, tenant.liveKey, '/images').send({ prompt: 'a red fox' }).expect(201);
    expect(res.body).toMatchObject({
      model: 'local-pattern-image-1',
      image: { mimeType: 'image/png' },
      cost: { amount: 4, currency: 'USD' },
    });
    const png = Buffer.from(res.body.image.b64, 'base64');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([256, 256]);
    expect((await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor).toBe(before - 4);
    expect(await meteringFor(res.headers['x-request-id']!)).toEqual([
      { cost_minor: 4, usage: { images: 1, inputTokens: 3, outputTokens: 0 }, operation: 'images.generate' },
    ]);
  });

  it.each([
    ['an aspect ratio outside the five', 'invalid_image_aspect_ratio', { prompt: 'x', aspectRatio: '2:1' }],
    ['an empty prompt', 'invalid_generation_prompt', { prompt: '' }],
    ['a prompt over 2000 characters', 'invalid_generation_prompt', { prompt: 'x'.repeat(2001) }],
    ['a numeric prompt', 'invalid_request_body', { prompt: 5 }],
    ['a numeric aspect ratio', 'invalid_request_body', { prompt: 'x', aspectRatio: 16 }],
    ['a missing prompt', 'invalid_request_body', {}],
  ])('rejects %s with %s', async (_name, code, body) => {
    const res = await postAs(t.http, tenant.testKey, '/images').send(body).expect(422);
    expect(res.body.error.code).toBe(code);
  });
});

describe('POST /embeddings', () => {
  it('answers a test key with 8-dimensional fixture vectors in input order at no cost', async () => {
    const res = await postAs(t.http, tenant.testKey, '/embeddings')
      .send({ input: ['alpha', 'beta', 'alpha'] })
      .expect(201);
    expect(res.body).toMatchObject({
      model: 'svc-test-fixture',
      usage: { inputTokens: 5 },
      cost: { amount: 0, currency: 'USD' },
    });
    const [a, b, a2] = res.body.embeddings as number[][];
    expect(a).toHaveLength(8);
    expect(a2).toEqual(a);
    expect(b).not.toEqual(a);
    const swapped = await postAs(t.http, tenant.testKey, '/embeddings')
      .send({ input: ['beta', 'alpha'] })
      .expect(201);
    expect(swapped.body.embeddings).toEqual([b, a]);
  });

  it('answers a live key with the local hashing stand-in, billed by input tokens', async () => {
    const input = ['the cat sat on the mat', 'the cat sat', 'quarterly revenue grew'];
    const res = await postAs(t.http, tenant.liveKey, '/embeddings').send({ input }).expect(201);
    expect(res.body).toMatchObject({
      model: 'local-hash-embedding-1',
      usage: { inputTokens: 15 },
      cost: { amount: 1, currency: 'USD' },
    });
    const [v1, v2, v3] = res.body.embeddings as number[][];
    const dot = (x: number[], y: number[]) => x.reduce((n, xi, i) => n + xi * y[i]!, 0);
    expect(v1).toHaveLength(256);
    expect(dot(v1!, v2!)).toBeGreaterThan(dot(v1!, v3!));
    expect(await meteringFor(res.headers['x-request-id']!)).toEqual([
      { cost_minor: 1, usage: { inputTokens: 15 }, operation: 'embeddings.create' },
    ]);
  });

  it('accepts 100 inputs and refuses 101', async () => {
    await postAs(t.http, tenant.testKey, '/embeddings')
      .send({ input: Array(100).fill('x') })
      .expect(201);
    const res = await postAs(t.http, tenant.testKey, '/embeddings')
      .send({ input: Array(101).fill('x') })
      .expect(422);
    expect(res.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [expect.objectContaining({ path: 'input' })],
    });
  });

  it.each([
    ['no texts', 'invalid_request_body', { input: [] }],
    ['a string instead of an array', 'invalid_request_body', { input: 'one text' }],
    ['numbers', 'invalid_request_body', { input: [1, 2] }],
    ['an empty text', 'invalid_generation_prompt', { input: ['ok', ''] }],
    ['a text over 50000 characters', 'invalid_generation_prompt', { input: ['y'.repeat(50_001)] }],
  ])('rejects %s with %s', async (_name, code, body) => {
    const res = await postAs(t.http, tenant.testKey, '/embeddings').send(body).expect(422);
    expect(res.body.error.code).toBe(code);
  });

  it('answers insufficient_credits for a live key of an empty workspace', async () => {
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const res = await postAs(t.http, broke.liveKey, '/embeddings')
      .send({ input: ['x'] })
      .expect(402);
    expect(res.body.error.code).toBe('insufficient_credits');
  });
});

describe('POST /images and /embeddings: project and money errors', () => {
  it.each([
    ['/images', { prompt: 'a red fox' }],
    ['/embeddings', { input: ['a red fox'] }],
  ])(
    '%s answers project_id_required, key_spend_limit_reached and insufficient_credits',
    async (path, body) => {
      const other = await tenant.addProject(`Second ${path}`);
      const multi = await tenant.key({ projectIds: [tenant.projectId, other] });
      const noProject = await postAs(t.http, multi.secret, path).send(body).expect(422);
      expect(noProject.body.error.code).toBe('project_id_required');
      await postAs(t.http, multi.secret, path)
        .send({ ...body, projectId: other })
        .expect(201);
      const capped = await tenant.key({ monthlySpendCapMinor: 0 });
      const overCap = await postAs(t.http, capped.secret, path).send(body).expect(402);
      expect(overCap.body.error.code).toBe('key_spend_limit_reached');
      const broke = await createTenant(t.deps.pool, { credits: 0 });
      const noCredit = await postAs(t.http, broke.liveKey, path).send(body).expect(402);
      expect(noCredit.body.error.code).toBe('insufficient_credits');
    },
  );
});

describe('POST /transcriptions', () => {
  const upload = (key: string) => postAs(t.http, key, '/transcriptions');

  it('answers a test key with the fixture transcript at no cost, and removes the upload', async () => {
    const res = await upload(tenant.testKey)
      .attach('audio', makeWav(1), { filename: 'hello.wav', contentType: 'audio/wav' })
      .expect(201);
    expect(res.body).toEqual({
      text: 'This is a test mode transcript.',
      model: 'svc-test-fixture',
      cost: { amount: 0, currency: 'USD' },
    });
    expect(await audioObjects()).toEqual([]);
  });

  it('answers a live key with the local stand-in, billed per audio second, streaming a multipart upload', async () => {
    // 200 s of 16 kHz 16-bit audio: 6.4 MB, more than one 5 MiB part on its way to storage.
    const wav = makeWav(200);
    const res = await upload(tenant.liveKey)
      .field('language', 'en')
      .attach('audio', wav, { filename: 'meeting.wav', contentType: 'audio/wav' })
      .expect(201);
    expect(res.body).toEqual({
      text: '[Local stand-in transcript: 200 s of audio/wav audio received; set PROVIDER=openai for speech recognition.]',
      model: 'local-offline-transcriber-1',
      cost: { amount: 2, currency: 'USD' },
    });
    expect(await meteringFor(res.headers['x-request-id']!)).toEqual([
      { cost_minor: 2, usage: { audioSeconds: 200 }, operation: 'transcriptions.create' },
    ]);
    expect(await audioObjects()).toEqual([]);
  });

  it('accepts a generic content type when the filename says audio', async () => {
    const res = await upload(tenant.testKey)
      .attach('audio', makeWav(0.2), { filename: 'note.mp3', contentType: 'application/octet-stream' })
      .expect(201);
    expect(res.body.text).toBe('This is a test mode transcript.');
  });

  it('answers unsupported_media_type (415) for a file that is not audio', async () => {
    const res = await upload(tenant.testKey)
      .attach('audio', Buffer.from('hello'), { filename: 'notes.txt', contentType: 'text/plain' })
      .expect(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('reads the content, not the label: an executable, a script or a PDF sent as audio is refused, nothing stored or billed', async () => {
    const before = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    // An ELF header, then 64 KiB: more than the bytes the type is read from, so it is streamed.
    const elf = Buffer.concat([
      Buffer.from('7f454c4602010100000000000000000002003e00', 'hex'),
      Buffer.alloc(64 * 1024, 1),
    ]);
    const cases: [Buffer, string, string][] = [
      [elf, 'speech.wav', 'audio/wav'],
      [Buffer.from('#!/bin/sh\nrm -rf /\n'), 'speech.mp3', 'audio/mpeg'],
      [Buffer.from('%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n'), 'speech.wav', 'audio/wav'],
    ];
    for (const [bytes, filename, contentType] of cases) {
      const res = await upload(tenant.liveKey).attach('audio', bytes, { filename, contentType }).expect(415);
      expect(res.body.error).toMatchObject({
        code: 'unsupported_media_type',
        message: `The audio field's content is not audio (declared ${contentType}).`,
      });
    }
    expect(await audioObjects()).toEqual([]);
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toEqual(before);
  });

  it('answers file_too_large (413) above 25 MiB and keeps nothing', async () => {
    const big = Buffer.alloc(25 * 1024 * 1024 + 10, 1);
    const res = await upload(tenant.liveKey)
      .attach('audio', big, { filename: 'long.mp3', contentType: 'audio/mpeg' })
      .expect(413);
    expect(res.body.error.code).toBe('file_too_large');
    expect(await audioObjects()).toEqual([]);
  });

  it('answers invalid_request_body without the audio field, for an empty file, or for a JSON body', async () => {
    const missing = await upload(tenant.testKey).field('language', 'en').expect(422);
    expect(missing.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [{ path: 'audio', message: 'is required' }],
    });
    const empty = await upload(tenant.liveKey)
      .attach('audio', Buffer.alloc(0), { filename: 'silence.wav', contentType: 'audio/wav' })
      .expect(422);
    expect(empty.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [{ path: 'audio', message: 'is empty' }],
    });
    expect(await audioObjects()).toEqual([]);
    const wrongField = await upload(tenant.testKey)
      .attach('file', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(422);
    expect(wrongField.body.error.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'file' })]),
    );
    const json = await upload(tenant.testKey).send({ audio: 'base64?' }).expect(422);
    expect(json.body.error.code).toBe('invalid_request_body');
  });

  it('answers invalid_generation_prompt for an empty or overlong prompt field', async () => {
    for (const prompt of ['', 'p'.repeat(2001)]) {
      const res = await upload(tenant.testKey)
        .field('prompt', prompt)
        .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
        .expect(422);
      expect(res.body.error.code).toBe('invalid_generation_prompt');
    }
    expect(await audioObjects()).toEqual([]);
  });

  it('checks a multipart projectId against the key: api_key_project_scope and project_id_required', async () => {
    const outside = await upload(tenant.testKey)
      .field('projectId', 'prj_elsewhere')
      .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(403);
    expect(outside.body.error.code).toBe('api_key_project_scope');
    const other = await tenant.addProject('Audio');
    const multi = await tenant.key({ livemode: false, projectIds: [tenant.projectId, other] });
    const res = await upload(multi.secret)
      .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(422);
    expect(res.body.error.code).toBe('project_id_required');
    await upload(multi.secret)
      .field('projectId', other)
      .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(201);
    expect(await audioObjects()).toEqual([]);
  });

  it('answers insufficient_credits and key_spend_limit_reached for live keys that cannot pay', async () => {
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const noCredit = await upload(broke.liveKey)
      .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(402);
    expect(noCredit.body.error.code).toBe('insufficient_credits');
    const capped = await tenant.key({ monthlySpendCapMinor: 0 });
    const noCap = await upload(capped.secret)
      .attach('audio', makeWav(0.1), { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(402);
    expect(noCap.body.error.code).toBe('key_spend_limit_reached');
    expect(await audioObjects()).toEqual([]);
  });
});
