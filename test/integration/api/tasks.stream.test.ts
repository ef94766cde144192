import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { makeApp } from '../../../api/app.ts';
import { cursorKey, encodeCursor } from '../../../api/http/cursor.ts';
import type { TaskMessageRow } from '../../../shared/db/queries/taskMessages.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { appendMessage } from '../../../shared/tasks/messages.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { adminQuery } from '../../helpers/database.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenApp, openSse, type SseStream, waitUntil } from './tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let server: Awaited<ReturnType<typeof listenApp>>;
const holdMs = 2000;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  // The same api (same pool and LISTEN hub) with a short hold so streams end within the test.
  server = await listenApp(makeApp({ ...t.deps, taskStream: { holdMs, heartbeatMs: 300 } }));
});
afterAll(async () => {
  await server.close();
  await t.close();
});

/** A task with its first user message; no worker runs here, so replies come only from `reply`. */
async function newTask(): Promise<string> {
  const res = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'Watch this.' }).expect(202);
  return res.body.task.id as string;
}

/** An assistant reply committed through the same path the worker uses. */
async function reply(
  taskId: string,
  text: string,
  role: 'assistant' | 'user' = 'assistant',
): Promise<TaskMessageRow> {
  const row = await t.deps.pool.transaction((tx) =>
    appendMessage(tx, {
      id: newId('msg'),
      workspaceId: tenant.workspaceId,
      taskId,
      role,
      text,
      projectId: tenant.projectId,
    }),
  );
  return row!;
}

function stream(
  taskId: string,
  options: { cursor?: string; headers?: Record<string, string> } = {},
): Promise<SseStream> {
  const query = options.cursor === undefined ? '' : `?cursor=${encodeURIComponent(options.cursor)}`;
  return openSse(`${server.origin}${api(`/tasks/${taskId}/stream`)}${query}`, {
    ...bearer(tenant.testKey),
    ...options.headers,
  });
}

const messageIds = (s: SseStream) =>
  s.events.filter((e) => e.event === 'message').map((e) => (e.data as { id: string }).id);
const isMessage = (id: string) => (e: { event: string; data: unknown }) =>
  e.event === 'message' && (e.data as { id: string }).id === id;

/** Reads `s` until the message `id` has arrived, closes it, and returns the ids of the messages it sent. */
async function idsUntil(s: SseStream, id: string, timeoutMs?: number): Promise<string[]> {
  await s.waitFor(isMessage(id), timeoutMs);
  s.close();
  return messageIds(s);
}

describe('GET /tasks/{taskId}/stream', () => {
  it('sends each reply after now as a message event, heartbeats, then done when the hold ends', async () => {
    const taskId = await newTask();
    const before = await reply(taskId, 'sent before the stream opened');
    const s = await stream(taskId);
    expect(s.status).toBe(200);
    await reply(taskId, 'a user message is not streamed', 'user');
    const r = await reply(taskId, 'the answer');
    const event = await s.waitFor(isMessage(r.id));
    expect(event.data).toEqual({ id: r.id, role: 'assistant', text: 'the answer', createdAt: r.created_at });
    expect(event.id).toMatch(/^[A-Za-z0-9_-]{35}$/);
    await s.ended;
    expect(s.events.map((e) => e.event)).toEqual(['message', 'done']);
    expect(s.events.at(-1)!.data).toEqual({});
    expect(messageIds(s)).not.toContain(before.id);
    expect(s.comments.filter((c) => c.includes('keep-alive')).length).toBeGreaterThanOrEqual(3);
  });

  it('resumes from a cursor after a disconnect, losing and repeating nothing', async () => {
    const taskId = await newTask();
    const first = await stream(taskId);
    const r1 = await reply(taskId, 'one');
    const e1 = await first.waitFor(isMessage(r1.id));
    first.close();
    // While the client is away: two replies and a user message.
    const r2 = await reply(taskId, 'two');
    await reply(taskId, 'follow-up', 'user');
    const r3 = await reply(taskId, 'three');
    const second = await stream(taskId, { cursor: e1.id! });
    await second.waitFor(isMessage(r3.id));
    const r4 = await reply(taskId, 'four');
    const secondIds = await idsUntil(second, r4.id);
    expect([...messageIds(first), ...secondIds]).toEqual([r1.id, r2.id, r3.id, r4.id]);
    // Each id line resumes right after its own message.
    const e3 = second.events.find(isMessage(r3.id))!;
    const third = await stream(taskId, { cursor: e3.id! });
    expect(await idsUntil(third, r4.id)).toEqual([r4.id]);
  });

  it('lets Last-Event-ID (an EventSource reconnect) win over the cursor in the URL', async () => {
    const taskId = await newTask();
    const s = await stream(taskId);
    const r1 = await reply(taskId, 'one');
    const r2 = await reply(taskId, 'two');
    const e2 = await s.waitFor(isMessage(r2.id));
    const e1 = s.events.find(isMessage(r1.id))!;
    s.close();
    const r3 = await reply(taskId, 'three');
    const again = await stream(taskId, { cursor: e1.id!, headers: { 'Last-Event-ID': e2.id! } });
    expect(await idsUntil(again, r3.id)).toEqual([r3.id]);
  });

  it('delivers a burst of concurrently committed replies once each, in order', async () => {
    const taskId = await newTask();
    const s = await stream(taskId);
    const rows = await Promise.all(Array.from({ length: 25 }, (_, i) => reply(taskId, `burst ${i}`)));
    const expected = [...rows].sort((a, b) => a.seq - b.seq).map((r) => r.id);
    await s.waitFor(isMessage(expected.at(-1)!));
    // The stream's own end (done, when the hold runs out) proves nothing more can arrive on it.
    await s.ended;
    expect(s.events.at(-1)!.event).toBe('done');
    expect(messageIds(s)).toEqual(expected);
  });

  it('catches up after the LISTEN connection was lost (NOTIFY is not durable)', async () => {
    const taskId = await newTask();
    const s = await stream(taskId);
    const pid = t.deps.hub.backendPid;
    expect(pid).toBeDefined();
    await adminQuery('select pg_terminate_backend($1)', [pid]);
    // Committed while the hub is (about to be) disconnected: its notification goes nowhere.
    const r = await reply(taskId, 'sent while the hub was down');
    await s.waitFor(isMessage(r.id), 1500);
    await waitUntil(async () => (t.deps.hub.isConnected && t.deps.hub.backendPid !== pid ? true : undefined));
    const after = await reply(taskId, 'sent after the hub came back');
    expect(await idsUntil(s, after.id, 1500)).toEqual([r.id, after.id]);
  });

  it('answers invalid_cursor (as JSON, before streaming) for cursors it did not issue', async () => {
    const taskId = await newTask();
    const otherTask = await newTask();
    const key = await cursorKey(t.deps.pool);
    for (const cursor of [
      'nonsense',
      encodeCursor(key, { purpose: 'messages', taskId, seq: 1 }),
      encodeCursor(key, { purpose: 'stream', taskId: otherTask, seq: 1 }),
    ]) {
      const res = await t.http
        .get(api(`/tasks/${taskId}/stream`))
        .query({ cursor })
        .set(bearer(tenant.testKey))
        .expect(422);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
    const missing = await t.http.get(api('/tasks/task_nope/stream')).set(bearer(tenant.testKey)).expect(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('drops a stream from the feed when its client goes away', async () => {
    const feed = t.deps.taskReplyFeed;
    const taskId = await newTask();
    const streams = await Promise.all([stream(taskId), stream(taskId), stream(taskId)]);
    await waitUntil(async () => (feed.size.subscribers >= 3 ? true : undefined));
    const r = await reply(taskId, 'to all three');
    for (const s of streams) await s.waitFor(isMessage(r.id));
    for (const s of streams) s.close();
    await waitUntil(async () => (feed.size.subscribers === 0 ? true : undefined), 5000);
    expect(feed.size).toEqual({ tasks: 0, subscribers: 0 });
  });

  it('ends open streams with done at once when the api begins to shut down', async () => {
    const taskId = await newTask();
    const shutdown = new AbortController();
    // A hold far beyond the test's time: only the shutdown can end this stream.
    const taskStream = { holdMs: 10 * 60_000, heartbeatMs: 60_000 };
    const app = await listenApp(makeApp({ ...t.deps, shutdown: shutdown.signal, taskStream }));
    try {
      const s = await openSse(`${app.origin}${api(`/tasks/${taskId}/stream`)}`, bearer(tenant.testKey));
      expect(s.status).toBe(200);
      const started = Date.now();
      shutdown.abort();
      await s.ended;
      expect(Date.now() - started).toBeLessThan(1000);
      expect(s.events.map((e) => e.event)).toEqual(['done']);
    } finally {
      await app.close();
    }
  });
});
