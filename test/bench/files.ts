import { readFileSync } from 'node:fs';
import http from 'node:http';
import { Readable } from 'node:stream';

import { sql } from '../../shared/db/sql.ts';
import { freePort } from '../../shared/embedded/freePort.ts';
import { ObjectStore } from '../../shared/storage/objectStore.ts';
import { spawnNode } from '../helpers/processes.ts';
import { apiProcessEnv, type BenchContext, type Platform } from './harness.ts';

const MiB = 1024 * 1024;
const size = 1024 * MiB;
const rounds = 2;
// Part PUTs in flight at once, the same for the platform's presigned URLs and the raw floor.
const partConcurrency = 4;

/** `bytes` of a fixed pattern in 1 MiB chunks, made as they are read (the client holds 1 MiB). */
function pattern(bytes: number): Readable {
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i += 4) chunk.writeUInt32LE((i * 2654435761) >>> 0, i);
  let left = bytes;
  return new Readable({
    read() {
      if (left === 0) return void this.push(null);
      const n = Math.min(left, MiB);
      left -= n;
      this.push(n === MiB ? chunk : chunk.subarray(0, n));
    },
  });
}

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Peak growth of process `pid`'s RSS over what it held before `work`, sampled every 10 ms. */
async function peakRssGrowth<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ value: T; growthMiB: number }> {
  const base = rssOf(pid);
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
  try {
    const value = await work();
    return { value, growthMiB: Math.round((peak - base) / MiB) };
  } finally {
    clearInterval(timer);
  }
}

/** The api alone in a process of its own (as a web dyno runs), so its RSS is its own. */
async function spawnApi(
  ctx: BenchContext,
): Promise<{ baseUrl: string; pid: number; stop(): Promise<unknown> }> {
  const port = await freePort();
  const api = spawnNode('api/server.ts', {
    ...apiProcessEnv(ctx, port),
    LOG_LEVEL: 'warn',
    // The direct limit (100 MiB by default) raised for the run: the target is set for 1 GiB.
    FILES_DIRECT_MAX_BYTES: String(2 * size),
  });
  const baseUrl = `http://127.0.0.1:${port}/api/pub/v1`;
  for (let i = 0; ; i++) {
    if (
      (await fetch(`${baseUrl}/openapi.json`).then(
        (r) => r.status,
        () => 0,
      )) === 200
    ) {
      break;
    }
    if (i > 300) throw new Error(`api did not start:\n${api.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { baseUrl, pid: api.child.pid!, stop: () => api.stop() };
}

/** POST /files of `size` bytes streamed from a generator; resolves with the status. */
function postFile(baseUrl: string, key: string, bytes = size): Promise<number> {
  const boundary = 'bench-boundary-7d1f';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + bytes + tail.length),
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.write(head);
    const body = pattern(bytes);
    body.on('end', () => req.end(tail));
    body.pipe(req, { end: false });
  });
}

/** PUTs parts (partSize each, the last shorter) to `urls`, `partConcurrency` at a time. */
async function putParts(urls: string[], partSize: number): Promise<{ partNumber: number; etag: string }[]> {
  const etags: { partNumber: number; etag: string }[] = [];
  let next = 0;
  const lane = async () => {
    while (next < urls.length) {
      const index = next++;
      const bytes = Math.min(partSize, size - index * partSize);
      const res = await fetch(urls[index]!, {
        method: 'PUT',
        body: Readable.toWeb(pattern(bytes)) as ReadableStream,
        headers: { 'content-length': String(bytes) },
        duplex: 'half',
      } as RequestInit);
      if (res.status !== 200) throw new Error(`part ${index + 1}: ${res.status}`);
      etags.push({ partNumber: index + 1, etag: res.headers.get('etag')! });
    }
  };
  await Promise.all(Array.from({ length: partConcurrency }, lane));
  return etags.sort((a, b) => a.partNumber - b.partNumber);
}

async function presignedUpload(platform: Platform): Promise<void> {
  const headers = { authorization: `Bearer ${platform.tenant.liveKey}`, 'content-type': 'application/json' };
  const created = await fetch(`${platform.baseUrl}/files/uploads`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ filename: 'big.bin', mimeType: 'application/octet-stream', sizeBytes: size }),
  });
  if (created.status !== 201) throw new Error(`POST /files/uploads: ${created.status}`);
  const { upload } = (await created.json()) as {
    upload: { sessionId: string; partSize: number; parts: { url: string }[] };
  };
  const parts = await putParts(
    upload.parts.map((p) => p.url),
    upload.partSize,
  );
  const done = await fetch(`${platform.baseUrl}/files/uploads/${upload.sessionId}/complete`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ parts }),
  });
  if (done.status !== 201) throw new Error(`complete: ${done.status} ${await done.text()}`);
}

/** The floor of a presigned upload: the same part PUTs, the multipart upload driven straight through S3. */
async function rawPartPuts(store: ObjectStore, key: string, partSize: number): Promise<void> {
  const uploadId = await store.startMultipart(key, 'application/octet-stream');
  const count = Math.ceil(size / partSize);
  const urls = [];
  for (let n = 1; n <= count; n++) urls.push(await store.presignPart(key, uploadId, n, 3600));
  const parts = await putParts(urls, partSize);
  await store.completeMultipart(key, uploadId, parts);
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const mibPerSecond = (seconds: number) => Math.round(size / MiB / seconds);
const best = (values: number[]) => Math.min(...values);

/**
 * 1 GiB through POST /files beside a raw streamed PUT of the same bytes to the same S3 server with
 * the minio client (target: ≥ 0.7× its throughput, api RSS growth ≤ 64 MiB); and 1 GiB through a
 * presigned upload beside the same part PUTs straight to S3 (target: ≥ 0.9×). Runs alternate, the
 * best of each counts.
 */
export default async function filesBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  const api = await spawnApi(ctx);
  await platform.pool.query(
    sql.typeAlias('void')`
      update workspaces set storage_quota_bytes = 1099511627776 where id = ${platform.tenant.workspaceId}
    `,
  );
  const store = new ObjectStore(ctx.s3);
  try {
    const direct: number[] = [];
    const raw: number[] = [];
    const growth: number[] = [];
    // Warm: the api's first request loads its validators; its RSS is measured from a running state.
    await postFile(api.baseUrl, platform.tenant.liveKey, 6 * MiB);
    for (let round = 0; round < rounds; round++) {
      // The platform first: the raw client's own buffers must not be in the RSS it is measured from.
      const { value: seconds, growthMiB } = await peakRssGrowth(api.pid, () =>
        timed(async () => {
          const status = await postFile(api.baseUrl, platform.tenant.liveKey);
          if (status !== 201) throw new Error(`POST /files: ${status}`);
        }),
      );
      direct.push(seconds);
      growth.push(growthMiB);
      raw.push(await timed(() => store.put(`bench/raw-${round}`, pattern(size), size)));
    }
    const directRatio = best(raw) / best(direct);
    const peakGrowth = Math.max(...growth);
    ctx.report('POST /files, 1 GiB (streamed to S3)', {
      'raw minio putObject MiB/s (best)': mibPerSecond(best(raw)),
      'POST /files MiB/s (best)': mibPerSecond(best(direct)),
      'ratio (target ≥ 0.7)': `${directRatio.toFixed(2)} ${directRatio >= 0.7 ? 'PASS' : 'FAIL'}`,
      'api process (its own) RSS growth, peak MiB (target ≤ 64)': `${peakGrowth} ${peakGrowth <= 64 ? 'PASS' : 'FAIL'}`,
    });

    const presigned: number[] = [];
    const floor: number[] = [];
    const partSize = 8 * MiB;
    for (let round = 0; round < rounds; round++) {
      floor.push(await timed(() => rawPartPuts(store, `bench/parts-${round}`, partSize)));
      presigned.push(await timed(() => presignedUpload(platform)));
    }
    const presignedRatio = best(floor) / best(presigned);
    ctx.report(`Presigned upload, 1 GiB (${size / partSize} parts of 8 MiB, ${partConcurrency} at a time)`, {
      'raw part PUTs to S3 MiB/s (best)': mibPerSecond(best(floor)),
      'presigned upload MiB/s (best)': mibPerSecond(best(presigned)),
      'ratio (target ≥ 0.9)': `${presignedRatio.toFixed(2)} ${presignedRatio >= 0.9 ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await api.stop();
    await platform.stop();
  }
}
