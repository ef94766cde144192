import type http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { listenOnLoopback, nextServerResponse, openRawSse, type RawSse } from '../../helpers/sse.ts';
import { waitUntil } from './tasks.helpers.ts';

let mock: OpenAiMock;
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  mock = await startOpenAiMock();
  t = await setupTestContext(openaiEnv(mock));
  tenant = await createTenant(t.deps.pool, { credits: 100_000_000 });
  await t.startWorker();
});
afterAll(async () => {
  await t.close();
  await mock.close();
});

// Loopback sockets take a few MB before a writer whose reader does not read meets a full buffer:
// a reply of 8 MB (8,000 "words" of 1,000 characters, each one provider delta) meets it for sure.
const reply = Array.from({ length: 8000 }, (_, i) => `${String(i).padStart(6, '0')}${'x'.repeat(993)} `).join('');

function leaseCount(): Promise<number> {
  return t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from stream_leases where workspace_id = ${tenant.workspaceId}
  `);
}

function lastTextJob(): Promise<{ status: string; cost_minor: number | null }> {
  return t.deps.pool.one(sql.type(z.object({ status: z.string(), cost_minor: z.number().nullable() }))`
    select status, cost_minor from jobs where workspace_id = ${tenant.workspaceId} and type = 'text.generate'
    order by created_at desc limit 1
  `);
}

/**
 * Opens a streaming POST /text on `origin` and watches the server's side of it: every write, and
 * how many were made while the socket's buffer was full (the response needed a drain).
 */
async function openTextStream(server: Awaited<ReturnType<typeof listenOnLoopback>>) {
  const watched = nextServerResponse(server.server, api('/text'));
  const stream = openRawSse(`${server.origin}${api('/text')}`, {
    method: 'POST',
    headers: { ...bearer(tenant.liveKey), 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'A long one', stream: true, maxTokens: 32_768 }),
  });
  const { res } = await watched;
  const counts = { writes: 0, refused: 0, whileBlocked: 0, deltasWhileBlocked: 0 };
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
    counts.writes++;
    if (res.writableNeedDrain) {
      counts.whileBlocked++;
      if (String(chunk).startsWith('event: delta')) counts.deltasWhileBlocked++;
    }
    const taken = write(chunk, ...rest);
    if (!taken) counts.refused++;
    return taken;
  };
  return { stream: await stream, res: res as http.ServerResponse, counts };
}

const deltaText = (s: RawSse) =>
  s.events
    .filter((e) => e.event === 'delta')
    .map((e) => (JSON.parse(e.data) as { text: string }).text)
    .join('');

describe('a streaming POST /text whose reader stops reading', () => {
  it('stops writing while the socket is full, then sends what waited as one delta: nothing lost or repeated', async () => {
    // Keep-alives every 50 ms: a stream that ignored backpressure would write them into the full buffer too.
    const server = await listenOnLoopback(
      makeApp({ ...t.deps, textStream: { keepaliveMs: 50, stallMs: 120_000 } }),
    );
    try {
      mock.queueChat({ kind: 'ok', text: reply });
      const { stream, res, counts } = await openTextStream(server);
      expect(stream.status).toBe(201);
      stream.pause();
      // The job finishes with the reader still paused: the whole reply reached the api meanwhile.
      await waitUntil(async () => ((await lastTextJob()).status === 'succeeded' ? true : undefined), 60_000);
      await waitUntil(async () => (res.writableEnded ? true : undefined), 30_000);
      // Blocked, it wrote only its end: the text that waited, as one delta, and done. Before the fix
      // each provider delta (8,000 of them) and each keep-alive went into the full buffer.
      expect(counts.refused).toBeGreaterThanOrEqual(1);
      expect(counts.deltasWhileBlocked).toBeLessThanOrEqual(1);
      expect(counts.whileBlocked).toBeLessThanOrEqual(2);

      stream.resume();
      expect(await stream.ended).toEqual({ complete: true });
      const done = stream.events.filter((e) => e.event === 'done');
      expect(done).toHaveLength(1);
      expect(stream.events.at(-1)!.event).toBe('done');
      const text = (JSON.parse(done[0]!.data) as { text: string }).text;
      expect(text).toBe(reply);
      expect(deltaText(stream)).toBe(reply);
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
    } finally {
      await server.close();
    }
  }, 120_000);

  it('cuts the connection when its end cannot be flushed within the stall bound, the job still billed', async () => {
    const server = await listenOnLoopback(makeApp({ ...t.deps, textStream: { keepaliveMs: 60_000, stallMs: 300 } }));
    try {
      mock.queueChat({ kind: 'ok', text: reply });
      const { stream, res } = await openTextStream(server);
      expect(stream.status).toBe(201);
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      stream.pause();
      // Never read again: once the end is written, the server gives it 300 ms, then destroys the socket.
      await closed;
      expect(res.writableFinished).toBe(false);
      const job = await waitUntil(async () => {
        const last = await lastTextJob();
        return last.status === 'succeeded' ? last : undefined;
      }, 60_000);
      expect(job.cost_minor).toBeGreaterThan(0);
      stream.resume();
      expect(await stream.ended).toEqual({ complete: false });
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
    } finally {
      await server.close();
    }
  }, 120_000);
});
