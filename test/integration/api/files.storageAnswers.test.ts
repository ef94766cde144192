import type http from 'node:http';
import { request as httpRequest } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { StorageUnavailableError } from '../../../shared/storage/storageFailure.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type S3Proxy, startS3Proxy } from '../../helpers/s3Proxy.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

/**
 * S3 answers the client cannot read or act on, as a proxy or a misbehaving server gives them: each
 * is 503 service_unavailable with Retry-After in the envelope, never a 500; the cause is in the log.
 */
let t: TestContext;
let tenant: Tenant;
let s3: EmbeddedS3Handle;
let proxy: S3Proxy;
/** The answer the proxy gives in S3's place to the requests it matches; none: pass through. */
let fault: ((req: http.IncomingMessage, res: http.ServerResponse) => boolean) | undefined;

beforeAll(async () => {
  s3 = await startScratchS3('answers', 'answers-spare');
  proxy = await startS3Proxy(s3.endpoint, (req, res) => fault?.(req, res) ?? false);
  t = await setupTestContext({ S3_ENDPOINT: proxy.endpoint });
  tenant = await createTenant(t.deps.pool);
});
afterAll(async () => {
  await t.close();
  await proxy.close();
  await s3.stop();
});

const answer =
  (match: (req: http.IncomingMessage) => boolean, status: number, body: string, type = 'application/xml') =>
  (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!match(req)) return false;
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': type });
      res.end(req.method === 'HEAD' ? undefined : body);
    });
    return true;
  };

const query = (req: http.IncomingMessage) => new URL(req.url!, 'http://s3').searchParams;
const gatewayPage = '<html><body><h1>502 Bad Gateway</h1></body></html>';

function expectUnavailable(res: { status: number; headers: Record<string, string>; body: unknown }) {
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toBe('2');
  expect(res.body).toEqual({
    error: {
      code: 'service_unavailable',
      message: expect.stringMatching(/storage/i),
      requestId: expect.any(String),
    },
  });
}

async function startSession(sizeBytes: number) {
  const res = await postAs(t.http, tenant.liveKey, '/files/uploads')
    .send({ filename: 'a.bin', mimeType: 'application/octet-stream', sizeBytes })
    .expect(201);
  return res.body.upload as { sessionId: string; parts: { partNumber: number; url: string }[] };
}

describe('S3 answers the client cannot read', () => {
  it('a gateway page instead of the object: downloads answer 503', async () => {
    const uploaded = await postAs(t.http, tenant.liveKey, '/files')
      .attach('file', Buffer.from('stored bytes'), { filename: 'a.txt', contentType: 'text/plain' })
      .expect(201);
    fault = answer((req) => req.method === 'GET', 502, gatewayPage, 'text/html');
    try {
      expectUnavailable(
        await t.http.get(api(`/files/${uploaded.body.file.id}/content`)).set(bearer(tenant.liveKey)),
      );
    } finally {
      fault = undefined;
    }
  });

  it('HTML where CreateMultipartUpload XML belongs: starting an upload answers 503, its hold given back', async () => {
    fault = answer(
      (req) => req.method === 'POST' && query(req).has('uploads'),
      200,
      gatewayPage,
      'text/html',
    );
    try {
      expectUnavailable(
        await postAs(t.http, tenant.liveKey, '/files/uploads').send({
          filename: 'a.bin',
          mimeType: 'application/octet-stream',
          sizeBytes: 1000,
        }),
      );
    } finally {
      fault = undefined;
    }
    const holds = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from storage_reservations where workspace_id = ${tenant.workspaceId}
    `);
    expect(holds).toBe(0);
  });

  it('a ListParts page truncated without a next marker, errors inside CompleteMultipartUpload 200s, a lost answer', async () => {
    const data = Buffer.alloc(1000, 7);
    const session = await startSession(data.length);
    const put = await fetch(session.parts[0]!.url, { method: 'PUT', body: data });
    const parts = [{ partNumber: 1, etag: put.headers.get('etag') }];
    const complete = () =>
      postAs(t.http, tenant.liveKey, `/files/uploads/${session.sessionId}/complete`).send({ parts });

    const isListParts = (req: http.IncomingMessage) => req.method === 'GET' && query(req).has('uploadId');
    const isComplete = (req: http.IncomingMessage) => req.method === 'POST' && query(req).has('uploadId');
    const faults = [
      answer(isListParts, 200, '<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>'),
      answer(isComplete, 200, '<Error><Code>InternalError</Code><Message>try again</Message></Error>'),
      answer(isComplete, 200, gatewayPage, 'text/html'),
      answer(isComplete, 503, '<Error><Code>SlowDown</Code><Message>slow down</Message></Error>'),
    ];
    try {
      for (const each of faults) {
        fault = each;
        expectUnavailable(await complete());
      }
    } finally {
      fault = undefined;
    }
    // S3 assembles the object, but its answer is lost: the transaction that would record the file
    // rolls back, and the same complete sent again finds the object assembled and records it.
    let assembled = false;
    fault = (req, res) => {
      if (!isComplete(req)) return false;
      const upstream = new URL(s3.endpoint);
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answered) => {
          answered.resume();
          answered.on('end', () => {
            assembled = answered.statusCode === 200;
            res.destroy();
          });
        },
      );
      req.pipe(forward);
      return true;
    };
    try {
      expectUnavailable(await complete());
    } finally {
      fault = undefined;
    }
    expect(assembled).toBe(true);
    const recorded = await complete();
    expect(recorded.status).toBe(201);
    const store = new ObjectStore(t.s3);
    const key = await t.deps.pool.oneFirst(sql.type(z.object({ storage_key: z.string() }))`
      select storage_key from files where id = ${recorded.body.file.id}
    `);
    expect((await store.getBuffer(key)).equals(data)).toBe(true);
  });

  it('HEAD answers without a body (500, 503) and NoSuchBucket are outages at the store', async () => {
    const store = new ObjectStore(t.s3);
    for (const status of [500, 503]) {
      fault = answer((req) => req.method === 'HEAD', status, '');
      await expect(store.stat('files/any')).rejects.toBeInstanceOf(StorageUnavailableError);
    }
    fault = undefined;
    const elsewhere = new ObjectStore({ ...t.s3, bucket: 'no-such-bucket-here' });
    await expect(elsewhere.put('k', Buffer.from('x'))).rejects.toMatchObject({
      name: 'StorageUnavailableError',
      message: `bucket 'no-such-bucket-here' at ${proxy.endpoint} does not exist: run the release process (npm run release), which creates it, or fix S3_BUCKET`,
    });
    // A missing key is an answer, not an outage.
    expect(await store.stat('files/never-stored')).toBeUndefined();
  });
});
