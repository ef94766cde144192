import { EventEmitter } from 'node:events';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';

import { makeApp } from '../../../api/app.ts';
import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { wavOfBytes } from '../../helpers/audio.ts';
import { api, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { multipartBody, parseResponse, sendPartially } from '../../helpers/rawHttp.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

// This file's own S3 server: nothing else writes to it, so "nothing left" means exactly that.
const bucket = 'svc-aborted-uploads';
const idleTimeoutMs = 400;
const MiB = 1024 * 1024;

let s3: EmbeddedS3Handle;
let store: ObjectStore;
let t: TestContext;
let tenant: Tenant;
type Server = { origin: string; close(): Promise<void> };
/** The api with the default idle timeout (60 s), and one that gives up on a silent client sooner. */
let patient: Server;
let impatient: Server;
/** The api's log lines, as events named by their message. */
const logged = new EventEmitter().setMaxListeners(0);

beforeAll(async () => {
  s3 = await startScratchS3('aborted', bucket);
  t = await setupTestContext({ S3_ENDPOINT: s3.endpoint, S3_BUCKET: bucket });
  store = new ObjectStore(t.s3);
  tenant = await createTenant(t.deps.pool);
  const logger = pino({ level: 'info' }, { write: (line: string) => logged.emit(JSON.parse(line).msg) });
  patient = await listenOnLoopback(makeApp({ ...t.deps, logger }));
  const config = { ...t.deps.config, uploadIdleTimeoutMs: idleTimeoutMs };
  impatient = await listenOnLoopback(makeApp({ ...t.deps, config, logger }));
});
afterAll(async () => {
  await patient.close();
  await impatient.close();
  await t.close();
  await s3.stop();
});

async function multipartUploads(): Promise<string[]> {
  const result = await store.client.listIncompleteUploadsQuery(bucket, '', '', '', '');
  return result.uploads.map((u) => u.key);
}

async function objects(): Promise<string[]> {
  const names: string[] = [];
  for await (const item of store.client.listObjectsV2(bucket, '', true)) {
    names.push((item as { name: string }).name);
  }
  return names;
}

/** Resolves once `count` requests have reached the error handler as "client left". */
function handlersFinished(count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    const onLine = () => {
      if (++seen < count) return;
      logged.off('client left before the answer', onLine);
      resolve();
    };
    logged.on('client left before the answer', onLine);
  });
}

/** Polls until `predicate` holds: waiting for something to happen, never to prove it did not. */
async function until(predicate: () => Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((r) => setTimeout(r, 20));
}

const audio = (bytes: number) =>
  multipartBody([
    { name: 'language', value: 'en' },
    { name: 'audio', filename: 'long.wav', contentType: 'audio/wav', data: wavOfBytes(bytes, 7) },
  ]);

function startUpload(server: Server, bytes: number, sendBytes: number) {
  const { body, contentType } = audio(bytes);
  return sendPartially(server.origin, {
    path: api('/transcriptions'),
    headers: { Authorization: `Bearer ${tenant.testKey}`, 'Content-Type': contentType },
    body,
    sendBytes,
  });
}

describe('POST /transcriptions with a client that goes away', () => {
  it('ends every handler, aborts every multipart upload and frees the buffers of 20 uploads cut off mid-body', async () => {
    // 6 MiB each, cut after 5.5 MiB: one 5 MiB part is in storage, the rest in memory, when they go.
    const clients = Array.from({ length: 20 }, () => startUpload(patient, 6 * MiB, 5.5 * MiB));
    await Promise.all(clients.map((c) => c.sent));
    await until(async () => (await multipartUploads()).length === 20);
    const finished = handlersFinished(20);
    for (const client of clients) client.socket.destroy();
    await finished;
    expect(await multipartUploads()).toEqual([]);
    expect(await objects()).toEqual([]);
    expect({ receiving: t.deps.uploads.receiving, bufferedBytes: t.deps.uploads.bufferedBytes }).toEqual({
      receiving: 0,
      bufferedBytes: 0,
    });
  }, 30_000);

  it('answers a client that stalls with the error envelope and closes its connection', async () => {
    // One stalls before a part was stored (a single PUT would follow), one after (multipart).
    const small = startUpload(impatient, 1 * MiB, 100 * 1024);
    const large = startUpload(impatient, 6 * MiB, 5.5 * MiB);
    await Promise.all([small.sent, large.sent]);
    const sentAt = Date.now();
    const [smallRaw, largeRaw] = await Promise.all([small.closed, large.closed]);
    // The server closed both connections, not before the client had been silent for the timeout
    // (less a little: the server may have read the last bytes just before the client heard they left).
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(idleTimeoutMs - 20);
    for (const raw of [smallRaw, largeRaw]) {
      const res = parseResponse(raw)!;
      expect(res.status).toBe(422);
      expect(res.headers.connection).toBe('close');
      expect(JSON.parse(res.body)).toEqual({
        error: {
          code: 'invalid_request_body',
          message: `No part of the request body arrived for ${idleTimeoutMs / 1000} s; the upload was abandoned.`,
          requestId: res.headers['x-request-id'],
          issues: [{ path: 'body', message: `incomplete: nothing received for ${idleTimeoutMs / 1000} s` }],
        },
      });
    }
    expect(await multipartUploads()).toEqual([]);
    expect(await objects()).toEqual([]);
    expect(t.deps.uploads.receiving).toBe(0);
    expect(t.deps.uploads.bufferedBytes).toBe(0);
  }, 30_000);

  it('still takes a whole upload sent slowly, each pause shorter than the idle timeout', async () => {
    // A language the handler refuses once the whole body is in: its answer shows the upload ended
    // normally (a stall would be an issue about the body), with no worker needed to get there.
    const { body, contentType } = multipartBody([
      { name: 'language', value: 'not a language' },
      { name: 'audio', filename: 'slow.wav', contentType: 'audio/wav', data: wavOfBytes(64 * 1024, 7) },
    ]);
    const client = sendPartially(impatient.origin, {
      path: api('/transcriptions'),
      headers: {
        Authorization: `Bearer ${tenant.testKey}`,
        'Content-Type': contentType,
        Connection: 'close',
      },
      body,
      sendBytes: 1000,
    });
    await client.sent;
    // Twelve pauses of a quarter of the timeout each: together three times as long, none nearly as long.
    const rest = body.subarray(1000);
    const step = Math.ceil(rest.length / 12);
    for (let from = 0; from < rest.length; from += step) {
      await new Promise((r) => setTimeout(r, idleTimeoutMs / 4));
      client.socket.write(rest.subarray(from, from + step));
    }
    const res = parseResponse(await client.closed)!;
    expect(res.status).toBe(422);
    expect(JSON.parse(res.body).error.issues).toEqual([
      { path: 'language', message: 'must be an ISO-639 language code' },
    ]);
    expect(await objects()).toEqual([]);
  }, 30_000);
});
