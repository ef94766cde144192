import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { type EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { type FaultProxy, startFaultProxy } from '../../helpers/faultProxy.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

/**
 * The S3 server stopped for 15 s while clients upload (POST /files, small and multipart-sized),
 * download (GET /files/{id}/content) and complete presigned uploads. During the outage every answer
 * is either a success or 503 service_unavailable with Retry-After in the spec's envelope: never a
 * 500, an HTML page or a hang. Afterwards every file row has its object, of its size, and the
 * workspace's storage usage is exactly the files stored, with no quota hold left behind.
 */
const outageMs = 15_000;
const MiB = 1024 * 1024;
// Well past any answer a live server gives here; a request still open then is a hang.
const hangMs = 20_000;

let t: TestContext;
let tenant: Tenant;
let server: LoopbackServer;
let s3: EmbeddedS3Handle;
// Between the api (and the presigned URLs' callers) and the S3 server: cut, it is a server that has
// stopped (open connections reset, new ones refused); restored, the same server is back.
let s3Link: FaultProxy;
// Set when the test ends, however it ends: every client loop below stops at its next turn.
let ended = false;

beforeAll(async () => {
  s3 = await startScratchS3('outage', 'outage-spare');
  s3Link = await startFaultProxy(s3.endpoint);
  t = await setupTestContext({ S3_ENDPOINT: s3Link.url.replace(/\/$/, '') });
  tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 100_000 });
  server = await t.listen();
  // As api/startApi.ts sets it: a client's pooled connection is never closed under it by the server.
  server.server.keepAliveTimeout = 65_000;
});
afterAll(async () => {
  ended = true;
  await t?.close();
  await s3Link?.close();
  await s3?.stop();
});

type Outcome = { call: string; status: number | string };
type Outcomes = { push(outcome: Outcome): unknown };

const patterned = (size: number, seed: number) => {
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4096) data.writeUInt32BE((seed * 2654435761 + i) >>> 0, i);
  return data;
};

/**
 * Calls the api, recording how it answered. A 503 must carry Retry-After and the envelope; any other
 * failure status, a non-JSON error or no answer within hangMs is recorded for the test to fail on.
 */
async function call(outcomes: Outcomes, name: string, url: string, init: RequestInit) {
  let res: Response;
  try {
    res = await fetch(`${server.origin}/api/pub/v1${url}`, {
      ...init,
      headers: { authorization: `Bearer ${tenant.liveKey}`, ...init.headers },
      signal: AbortSignal.timeout(hangMs),
    });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    outcomes.push({
      call: name,
      status: (error as Error).name === 'TimeoutError' ? 'hang' : `no answer: ${cause}`,
    });
    return undefined;
  }
  let body: Buffer;
  try {
    body = Buffer.from(await res.arrayBuffer());
  } catch {
    // The answer's head came, its body did not end: only a download whose object stream S3 broke
    // off may do this (its status is out; cutting the connection is how the client learns).
    outcomes.push({ call: name, status: `cut after ${res.status}` });
    return undefined;
  }
  outcomes.push({ call: name, status: res.status });
  if (res.status === 503) {
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(body.toString())).toEqual({
      error: {
        code: 'service_unavailable',
        message: expect.stringMatching(/storage/i),
        requestId: expect.any(String),
      },
    });
  }
  return { status: res.status, body, json: () => JSON.parse(body.toString()) as Record<string, unknown> };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function uploadForm(data: Buffer, filename: string) {
  const form = new FormData();
  form.append('file', new Blob([data], { type: 'application/octet-stream' }), filename);
  return form;
}

/** Direct uploads in a loop, alternating a small file and one that goes up as a multipart upload. */
async function uploader(outcomes: Outcomes, stored: Map<string, Buffer>, until: () => boolean, seed: number) {
  for (let i = 0; !until(); i++) {
    const data = patterned(i % 2 === 0 ? 64 * 1024 : 6 * MiB, seed * 1000 + i);
    const res = await call(outcomes, 'POST /files', '/files', {
      method: 'POST',
      body: uploadForm(data, `f${seed}-${i}.bin`),
    });
    if (res?.status === 201) stored.set((res.json().file as { id: string }).id, data);
    await pause(50);
  }
}

/** Downloads of files stored before the outage, whole and by range; bytes checked when they arrive. */
async function downloader(outcomes: Outcomes, files: [string, Buffer][], until: () => boolean) {
  for (let i = 0; !until(); i++) {
    const [id, data] = files[i % files.length]!;
    const ranged = i % 3 === 0;
    const res = await call(outcomes, 'GET /files/{id}/content', `/files/${id}/content`, {
      headers: ranged ? { range: 'bytes=10-4095' } : {},
    });
    if (res?.status === 200) expect(res.body.equals(data)).toBe(true);
    if (res?.status === 206) expect(res.body.equals(data.subarray(10, 4096))).toBe(true);
    await pause(50);
  }
}

/**
 * Presigned uploads as a client that honours Retry-After does them: start, PUT the part straight to
 * S3 (its own retries when S3 is down), complete; each step repeated until it succeeds or `until`
 * says the load is over; a session once started is always finished.
 */
async function presigner(outcomes: Outcomes, stored: Map<string, Buffer>, until: () => boolean) {
  for (let i = 0; !until(); i++) {
    const data = patterned(256 * 1024, 7000 + i);
    let session: Session | undefined;
    while (!session && !until()) {
      session = await startSession(outcomes, `p${i}.bin`, data);
      if (!session) await pause(500);
    }
    if (!session) return;
    await finishSession(outcomes, stored, session, data);
  }
}

type Session = { sessionId: string; parts: { url: string }[] };

/** POST /files/uploads for `data`: the session, or undefined when it was not answered 201. */
async function startSession(
  outcomes: Outcomes,
  filename: string,
  data: Buffer,
): Promise<Session | undefined> {
  const res = await call(outcomes, 'POST /files/uploads', '/files/uploads', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ filename, mimeType: 'application/octet-stream', sizeBytes: data.length }),
  });
  return res?.status === 201 ? (res.json().upload as Session) : undefined;
}

/** PUTs the one part of a started session (retrying while S3 is out), then completes it. */
async function finishSession(
  outcomes: Outcomes,
  stored: Map<string, Buffer>,
  session: Session,
  data: Buffer,
) {
  let etag: string | undefined;
  while (etag === undefined && !ended) {
    const put = await fetch(session.parts[0]!.url, { method: 'PUT', body: data }).catch(() => undefined);
    if (put?.ok) etag = put.headers.get('etag')!;
    else await pause(500);
  }
  if (etag !== undefined) {
    await completeUntilStored(outcomes, stored, { sessionId: session.sessionId, etag, data });
  }
}

/** Starts presigned uploads while `during` holds (S3 is down: each answers 503), finishing any that start. */
async function starter(outcomes: Outcomes, stored: Map<string, Buffer>, during: () => boolean) {
  for (let i = 0; during() && !ended; i++) {
    const data = patterned(64 * 1024, 8000 + i);
    const session = await startSession(outcomes, `s${i}.bin`, data);
    if (session) await finishSession(outcomes, stored, session, data);
    await pause(200);
  }
}

type PartsUploaded = { sessionId: string; etag: string; data: Buffer };

/** Completes a presigned upload whose part is in S3, after Retry-After each time storage is out. */
async function completeUntilStored(outcomes: Outcomes, stored: Map<string, Buffer>, upload: PartsUploaded) {
  while (!ended) {
    const res = await call(
      outcomes,
      'POST /files/uploads/{id}/complete',
      `/files/uploads/${upload.sessionId}/complete`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ parts: [{ partNumber: 1, etag: upload.etag }] }),
      },
    );
    if (res?.status === 201) {
      stored.set((res.json().file as { id: string }).id, upload.data);
      return;
    }
    expect(res?.status).toBe(503);
    await pause(2000);
  }
}

/** A presigned upload started and its part PUT while S3 is up, left to complete later. */
async function uploadParts(i: number): Promise<PartsUploaded> {
  const data = patterned(128 * 1024, 9000 + i);
  const ignored: Outcome[] = [];
  const res = await call(ignored, 'POST /files/uploads', '/files/uploads', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      filename: `c${i}.bin`,
      mimeType: 'application/octet-stream',
      sizeBytes: data.length,
    }),
  });
  expect(res?.status).toBe(201);
  const upload = res!.json().upload as { sessionId: string; parts: { url: string }[] };
  const put = await fetch(upload.parts[0]!.url, { method: 'PUT', body: data });
  expect(put.status).toBe(200);
  return { sessionId: upload.sessionId, etag: put.headers.get('etag')!, data };
}

const count = (outcomes: Outcome[]) => {
  const table: Record<string, Record<string, number>> = {};
  for (const { call: name, status } of outcomes) {
    table[name] ??= {};
    table[name][String(status)] = (table[name][String(status)] ?? 0) + 1;
  }
  return table;
};

describe('the S3 server stopped for 15 s under uploads and downloads', () => {
  it('answers 503 with Retry-After during it, and leaves every file with its object and the quota exact', async () => {
    const stored = new Map<string, Buffer>();
    // Files to download, stored while S3 is up.
    const before: Outcome[] = [];
    for (let i = 0; i < 3; i++) {
      const data = patterned(200 * 1024, 100 + i);
      const res = await call(before, 'POST /files', '/files', {
        method: 'POST',
        body: uploadForm(data, `d${i}.bin`),
      });
      expect(res?.status).toBe(201);
      stored.set((res!.json().file as { id: string }).id, data);
    }
    const downloads = [...stored.entries()];
    const toComplete = [await uploadParts(1), await uploadParts(2), await uploadParts(3)];

    const phases = { before: [] as Outcome[], during: [] as Outcome[], after: [] as Outcome[] };
    let phase: keyof typeof phases = 'before';
    const outcomes: Outcomes = { push: (outcome) => phases[phase].push(outcome) };
    let over = false;
    const until = () => over || ended;
    const load = Promise.all([
      uploader(outcomes, stored, until, 1),
      uploader(outcomes, stored, until, 2),
      downloader(outcomes, downloads, until),
      downloader(outcomes, downloads, until),
      presigner(outcomes, stored, until),
    ]);
    load.catch(() => {});

    await pause(2000);
    s3Link.cut();
    phase = 'during';
    const stoppedAt = Date.now();
    // Completes sent while S3 is down, retried until they land.
    const completing = Promise.all([
      ...toComplete.map((upload) => completeUntilStored(outcomes, stored, upload)),
      starter(outcomes, stored, () => phase === 'during'),
    ]);
    // Awaited below; a failure meanwhile must fail this test, not the test process.
    completing.catch(() => {});
    await pause(outageMs);
    s3Link.restore();
    phase = 'after';
    const downFor = Date.now() - stoppedAt;
    await pause(4000);
    over = true;
    await Promise.all([load, completing]);

    const all = [...phases.before, ...phases.during, ...phases.after];
    console.log(
      `S3 down ${downFor} ms; answers before/during/after the outage: ${JSON.stringify({
        before: count(phases.before),
        during: count(phases.during),
        after: count(phases.after),
      })}`,
    );
    // Only successes and 503s, ever; no hang, no dropped connection, no 500 — but a download S3
    // broke off mid-body during the outage, which can only be cut.
    const cutDownload = (o: Outcome) =>
      o.call === 'GET /files/{id}/content' && /^cut after 20[06]$/.test(String(o.status));
    expect(all.filter((o) => ![200, 201, 206, 503].includes(o.status as number) && !cutDownload(o))).toEqual(
      [],
    );
    expect([...phases.before, ...phases.after].filter(cutDownload)).toEqual([]);
    // The outage was met (answered 503) and recovered from (successes after it), on every path.
    for (const name of [
      'POST /files',
      'GET /files/{id}/content',
      'POST /files/uploads',
      'POST /files/uploads/{id}/complete',
    ]) {
      expect(phases.during.some((o) => o.call === name && o.status === 503)).toBe(true);
      expect(phases.after.some((o) => o.call === name && o.status !== 503)).toBe(true);
    }

    // Every file row has its object, of its size; usage is exactly the files stored; no hold is left.
    const store = new ObjectStore(t.s3);
    const files = await t.deps.pool.any(
      sql.type(
        z.object({ id: z.string(), storage_key: z.string(), size_bytes: z.number() }),
      )`select id, storage_key, size_bytes from files where workspace_id = ${tenant.workspaceId}`,
    );
    expect(new Set(files.map((f) => f.id))).toEqual(new Set(stored.keys()));
    for (const file of files) {
      expect(await store.stat(file.storage_key)).toMatchObject({ size: file.size_bytes });
    }
    const sampled = files.filter((_, i) => i % 5 === 0);
    for (const file of sampled) {
      expect((await store.getBuffer(file.storage_key)).equals(stored.get(file.id)!)).toBe(true);
    }
    const usage = await t.deps.pool.one(sql.type(
      z.object({ used: z.number(), stored: z.number(), held: z.number() }),
    )`
      select w.storage_used_bytes::float8 as used,
             (select coalesce(sum(size_bytes), 0)::float8 from files where workspace_id = w.id) as stored,
             (select count(*)::int from storage_reservations where workspace_id = w.id) as held
      from workspaces w where w.id = ${tenant.workspaceId}
    `);
    expect(usage).toEqual({ used: usage.stored, stored: usage.stored, held: 0 });
  }, 90_000);
});
