import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import supertest from 'supertest';

import { makeApp } from '../../../api/app.ts';
import { makeAppDeps } from '../../../api/makeDeps.ts';
import { loadConfig } from '../../../shared/config/config.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { api, bearer, testEnv } from '../../helpers/context.ts';
import { createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';
import { createTenant } from '../../helpers/fixtures.ts';
import { capturingLogger } from '../../helpers/logCapture.ts';
import { logLines, spawnNode } from '../../helpers/processes.ts';
import { startS3Proxy } from '../../helpers/s3Proxy.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

/**
 * The bucket as operators meet it: an S3 server that has never seen S3_BUCKET. `release` creates it
 * (and says so); where it cannot (creation refused, credentials refused, nothing listening) release
 * and `npm start` stop with one line naming the bucket and the endpoint, exit 1, no stack.
 */
let db: { name: string; url: string };
let s3: EmbeddedS3Handle;
const s3Key = { S3_ACCESS_KEY: 'S3RVER', S3_SECRET_KEY: 'S3RVER' };

beforeAll(async () => {
  db = await createTestDatabase();
  // The server holds another bucket only: ours does not exist there.
  s3 = await startScratchS3('bucket', 'someone-elses');
});
afterAll(async () => {
  await s3.stop();
  await dropTestDatabase(db.name);
});

const releaseWith = async (env: Record<string, string>) => {
  const release = spawnNode('db/release.ts', { DATABASE_URL: db.url, LOG_LEVEL: 'info', ...s3Key, ...env });
  const { code } = await release.exited;
  return { code, output: release.output() };
};

const noStack = (output: string) => expect(output).not.toMatch(/^\s+at /m);

/** Answers CreateBucket (PUT on the bucket itself) as S3 does for credentials without s3:CreateBucket. */
const refuseCreateBucket = (bucket: string) =>
  startS3Proxy(s3.endpoint, (req, res) => {
    if (req.method !== 'PUT' || req.url?.split('?')[0] !== `/${bucket}`) return false;
    res.writeHead(403, { 'content-type': 'application/xml' });
    res.end(
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
    );
    return true;
  });

describe('release on an S3 server without the bucket', () => {
  it('creates the bucket; file uploads that answered 503 before then succeed', async () => {
    const bucket = 'fresh-release-bucket';
    const config = loadConfig({
      ...testEnv({ S3_ENDPOINT: s3.endpoint, S3_BUCKET: bucket }),
      DATABASE_URL: db.url,
    });
    const { logger, lines } = capturingLogger({ level: 'warn' });
    const deps = await makeAppDeps(
      config,
      { databaseUrl: db.url, s3: { ...config.s3, endpoint: s3.endpoint } },
      logger,
    );
    try {
      const http = supertest(makeApp(deps));
      const tenant = await createTenant(deps.pool);
      const upload = () =>
        http
          .post(api('/files'))
          .set(bearer(tenant.testKey))
          .attach('file', Buffer.from('hello bucket'), { filename: 'a.txt', contentType: 'text/plain' });

      // A web process started before release: the operator's problem, said as such, never a 500.
      const before = await upload();
      expect(before.status).toBe(503);
      expect(before.headers['retry-after']).toBe('2');
      expect(before.body.error).toMatchObject({
        code: 'service_unavailable',
        message: expect.stringMatching(/storage/i),
      });
      expect(lines.join('\n')).toContain(`bucket '${bucket}' at ${s3.endpoint} does not exist`);

      const first = await releaseWith({ S3_ENDPOINT: s3.endpoint, S3_BUCKET: bucket });
      expect(first).toMatchObject({ code: 0 });
      expect(first.output).toContain(`S3 bucket '${bucket}' at ${s3.endpoint} created`);
      expect(await new ObjectStore({ ...config.s3, endpoint: s3.endpoint }).bucketExists()).toBe(true);

      const again = await releaseWith({ S3_ENDPOINT: s3.endpoint, S3_BUCKET: bucket });
      expect(again).toMatchObject({ code: 0 });
      expect(again.output).toContain(`S3 bucket '${bucket}' at ${s3.endpoint} exists`);

      // No restart needed: the same api stores into the bucket now there.
      const after = await upload();
      expect(after.status).toBe(201);
    } finally {
      await deps.close();
    }
  });
});

describe('release and npm start where the bucket cannot be made', () => {
  it('stops release with the bucket, the endpoint and the reason when creation is refused', async () => {
    const bucket = 'refused-bucket';
    const proxy = await refuseCreateBucket(bucket);
    try {
      const { code, output } = await releaseWith({ S3_ENDPOINT: proxy.endpoint, S3_BUCKET: bucket });
      expect(code).toBe(1);
      expect(output).toContain(
        `release stopped: S3 bucket '${bucket}' at ${proxy.endpoint} could not be created: the credentials may not create buckets (AccessDenied)`,
      );
      noStack(output);
    } finally {
      await proxy.close();
    }
  });

  it('names refused credentials without showing them', async () => {
    const secret = 'not-the-secret-s3rver-knows-0123456789';
    const { code, output } = await releaseWith({
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: 'any-bucket',
      S3_ACCESS_KEY: 'someone',
      S3_SECRET_KEY: secret,
    });
    expect(code).toBe(1);
    expect(output).toContain(
      `release stopped: S3 bucket 'any-bucket' at ${s3.endpoint} could not be checked: S3 refused access (403 AccessDenied): check S3_ACCESS_KEY and S3_SECRET_KEY`,
    );
    expect(output).not.toContain(secret);
    noStack(output);
  });

  it('names an endpoint where nothing listens', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const { code, output } = await releaseWith({ S3_ENDPOINT: endpoint, S3_BUCKET: 'any-bucket' });
    expect(code).toBe(1);
    expect(output).toContain(
      `release stopped: S3 bucket 'any-bucket' at ${endpoint} could not be checked: S3 at ${endpoint} could not be reached (ECONNREFUSED)`,
    );
    noStack(output);
  });

  it('stops npm start the same way, before it migrates or listens', async () => {
    const bucket = 'refused-at-start';
    const proxy = await refuseCreateBucket(bucket);
    const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-start-bucket-'));
    try {
      const port = await freePort();
      const start = spawnNode('bin/start.ts', {
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        PORT: String(port),
        S3_ENDPOINT: proxy.endpoint,
        S3_BUCKET: bucket,
        LOG_LEVEL: 'info',
        ...s3Key,
      });
      const { code } = await start.exited;
      expect(code).toBe(1);
      const stopped = logLines(start.output()).filter((line) => line.level === 50);
      expect(stopped).toEqual([
        expect.objectContaining({
          msg: `start-up stopped: S3 bucket '${bucket}' at ${proxy.endpoint} could not be created: the credentials may not create buckets (AccessDenied): create the bucket beforehand, or allow s3:CreateBucket`,
        }),
      ]);
      expect(stopped[0]).not.toHaveProperty('err');
      expect(start.output()).not.toMatch(/platform ready|api listening/);
    } finally {
      await proxy.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
