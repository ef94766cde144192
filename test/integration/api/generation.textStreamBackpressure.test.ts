import type http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import type { OpenAiMock } from '../../helpers/openaiMock.ts';
import { nextServerResponse, openRawSse, type RawSse } from '../../helpers/sse.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

let mock: OpenAiMock;
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({
    // One minor unit per output token: the mock counts one token per word, so a reply's price is its word count.
    env: { PRICES: JSON.stringify({ textInputPer1MTokens: 0, textOutputPer1MTokens: 1_000_000 }) },
    credits: 100_000_000,
    worker: true,
  }));
});
afterAll(() => t.close());

/**
 * A reply of `count` words of 1,000 ASCII characters (a byte each, nothing JSON escapes). The mock
 * streams it word by word; the worker relays it in NOTIFY pieces of at most 1,000 characters (see
 * shared/generation/textDeltas.ts), so the api receives about one delta per word. Loopback sockets take about
 * 4 MB before a writer whose reader does not read meets a full buffer.
 */
const replyOf = (count: number) =>
  Array.from({ length: count }, (_, i) => `${String(i).padStart(6, '0')}${'x'.repeat(993)} `).join('');

function leaseCount(): Promise<number> {
  return t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from stream_leases where workspace_id = ${tenant.workspaceId}
  `);
}

function jobOf(requestId: string): Promise<{ status: string; cost_minor: number | null }> {
  return t.deps.pool.one(sql.type(z.object({ status: z.string(), cost_minor: z.number().nullable() }))`
    select status, cost_minor from jobs where request_id = ${requestId}
  `);
}

function meteringFor(requestId: string): Promise<readonly number[]> {
  return t.deps.pool.anyFirst(sql.type(z.object({ cost_minor: z.number() }))`
    select cost_minor from metering_records where request_id = ${requestId}
  `);
}

const balance = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;

/** What the server wrote to one response, as seen from its side. */
type Writes = {
  /** Delta frames and their text (characters) written up to and including the first write that found the buffer full. */
  beforeBlock: { deltas: number; text: number } | undefined;
  /** The first line of every later write made while the response waited for a drain. */
  whileBlocked: string[];
  /** 'drain' events: a paused reader's socket never drains. */
  drains: number;
  /** When res.end was called. */
  endedAt: number | undefined;
};

/**
 * Opens a streaming POST /text and watches the server's side of it: its most bytes buffered for the
 * client (maxBuffered), and every write, in particular those made once the buffer was full.
 */
async function openTextStream(server: Awaited<ReturnType<typeof listenOnLoopback>>, prompt: string) {
  const watched = nextServerResponse(server.server, api('/text'));
  const opened = openRawSse(`${server.origin}${api('/text')}`, {
    method: 'POST',
    headers: { ...bearer(tenant.liveKey), 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, stream: true, maxTokens: 32_768 }),
  });
  // The app awaits its lease before it writes anything: the wrappers are in place before the first write.
  const { res, maxBuffered } = await watched;
  const writes: Writes = { beforeBlock: undefined, whileBlocked: [], drains: 0, endedAt: undefined };
  const sent = { deltas: 0, text: 0 };
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
    const s = String(chunk);
    if (writes.beforeBlock) writes.whileBlocked.push(s.slice(0, s.indexOf('\n')));
    else if (s.startsWith('event: delta\n')) {
      sent.deltas++;
      sent.text += (JSON.parse(s.slice(s.indexOf('data: ') + 6)) as { text: string }).text.length;
    }
    const taken = write(chunk, ...rest);
    if (!taken) writes.beforeBlock ??= { ...sent };
    return taken;
  };
  const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
  (res as { end: unknown }).end = (...args: unknown[]) => {
    writes.endedAt ??= Date.now();
    return end(...args);
  };
  res.on('drain', () => writes.drains++);
  const stream = await opened;
  return { stream, res: res as http.ServerResponse, maxBuffered, writes };
}

const deltaTexts = (s: RawSse) =>
  s.events.filter((e) => e.event === 'delta').map((e) => (JSON.parse(e.data) as { text: string }).text);

describe('a streaming POST /text whose reader stops reading', () => {
  it('writes nothing into the full buffer but its end (the text that waited as one delta, then done), and loses or repeats nothing', async () => {
    const reply = replyOf(6000);
    // Keep-alives every 50 ms: a stream that ignored backpressure would write them into the full buffer too.
    const server = await listenOnLoopback(
      makeApp({ ...t.deps, textStream: { keepaliveMs: 50, stallMs: 60_000 } }),
    );
    try {
      mock.queueChat({ kind: 'ok', text: reply });
      const { stream, res, maxBuffered, writes } = await openTextStream(server, 'A long one');
      expect(stream.status).toBe(201);
      stream.pause();
      const requestId = String(stream.headers['x-request-id']);
      expect(await leaseCount()).toBe(1);

      // The job finishes with the reader still paused: the whole reply reached the api meanwhile.
      await waitUntil(
        async () => ((await jobOf(requestId)).status === 'succeeded' ? true : undefined),
        100_000,
      );
      await waitUntil(async () => (res.writableEnded ? true : undefined), 10_000);
      // The socket filled up well before the reply's end (about 4 MB of 6 MB; at least 0.5 MB was left)...
      expect(writes.beforeBlock).toBeDefined();
      const { deltas: deltasBeforeBlock, text: textBeforeBlock } = writes.beforeBlock!;
      const textAfterBlock = reply.length - textBeforeBlock;
      expect(textAfterBlock).toBeGreaterThan(500_000);
      // ...and from then on only the end was written: the text that waited, as one delta, then done.
      // Without backpressure each later delta (a frame per 1,000 characters: hundreds) and each
      // keep-alive went into the full buffer.
      expect(writes.whileBlocked).toEqual(['event: delta', 'event: done']);
      expect(writes.drains).toBe(0);
      const buffered = maxBuffered();

      stream.resume();
      expect(await stream.ended).toEqual({ complete: true });
      const done = stream.events.filter((e) => e.event === 'done');
      expect(done).toHaveLength(1);
      expect(stream.events.at(-1)!.event).toBe('done');
      expect((JSON.parse(done[0]!.data) as { text: string }).text).toBe(reply);
      // Nothing lost or repeated: the deltas add up to the mock's text, the last one being all that waited.
      const deltas = deltaTexts(stream);
      expect(deltas.join('')).toBe(reply);
      expect(deltas).toHaveLength(deltasBeforeBlock + 1);
      expect(deltas.at(-1)).toBe(reply.slice(textBeforeBlock));
      // Buffered for the paused reader at most: the socket's buffer when it filled (its high-water
      // mark and the frame that crossed it), the text that waited (one frame) and done (the whole
      // body, the text again). The frames of the deltas written one by one would exceed it by far
      // more than the 4 KiB allowed for the frames' headers (some 30 bytes a frame).
      const doneFrame = Buffer.byteLength(`event: done\ndata: ${done[0]!.data}\n\n`);
      expect(buffered).toBeLessThanOrEqual(res.writableHighWaterMark + textAfterBlock + doneFrame + 4096);
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
    } finally {
      await server.close();
    }
  }, 150_000);

  it('cuts the connection when its end cannot be flushed within stallMs, the job still billed and its lease given back', async () => {
    const words = 3000;
    const reply = replyOf(words);
    const stallMs = 300;
    const server = await listenOnLoopback(
      makeApp({ ...t.deps, textStream: { keepaliveMs: 60_000, stallMs } }),
    );
    try {
      const before = await balance();
      mock.queueChat({ kind: 'ok', text: reply });
      const { stream, res, writes } = await openTextStream(server, 'Another long one');
      expect(stream.status).toBe(201);
      const requestId = String(stream.headers['x-request-id']);
      const closed = new Promise<number>((resolve) => res.once('close', () => resolve(Date.now())));
      stream.pause();
      expect(await leaseCount()).toBe(1);
      // Never read again: the deltas and done (the text twice, 6 MB) exceed what the sockets take, so
      // the end is written but never flushed, and stallMs after it the server destroys the connection.
      const endedAt = await waitUntil(async () => writes.endedAt, 100_000);
      const closedAt = await Promise.race([
        closed,
        new Promise<never>((_, fail) =>
          setTimeout(
            () => fail(new Error('the connection was not cut within 5 s of its end')),
            5_000,
          ).unref(),
        ),
      ]);
      expect(writes.beforeBlock).toBeDefined();
      expect(res.writableEnded).toBe(true);
      expect(res.writableFinished).toBe(false);
      expect(closedAt - endedAt).toBeGreaterThanOrEqual(stallMs - 20);
      // What the kernel had taken still arrives, a prefix of the text; done never does.
      stream.resume();
      expect(await stream.ended).toEqual({ complete: false });
      expect(reply.startsWith(deltaTexts(stream).join(''))).toBe(true);
      expect(stream.events.filter((e) => e.event === 'done')).toEqual([]);

      // The job had finished (its end was being written): it stays succeeded and billed (a minor unit
      // a word), its hold closed; the cut gives the stream's lease back.
      expect(await jobOf(requestId)).toEqual({ status: 'succeeded', cost_minor: words });
      expect(await meteringFor(requestId)).toEqual([words]);
      expect(await balance()).toMatchObject({
        balance_minor: before.balance_minor - words,
        reserved_minor: 0,
      });
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
    } finally {
      await server.close();
    }
  }, 150_000);
});
