import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import type { TaskMessageRow } from '../../../shared/db/queries/taskMessages.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { appendMessage } from '../../../shared/tasks/messages.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { nextServerResponse, openRawSse, type RawSse, type RawSseEvent } from '../../helpers/sse.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
});
afterAll(async () => {
  await t.close();
});

// Loopback sockets take about 4 MB before a reader that does not read blocks the writer: replies
// worth twice that make sure the stream meets a full buffer.
const replyChars = 40_000;
const replyCount = 200;

async function newTask(): Promise<string> {
  const res = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'Big replies.' });
  expect(res.status).toBe(202);
  return res.body.task.id as string;
}

/** Assistant replies committed in one transaction, through the path the worker uses. */
async function replies(taskId: string, count: number, chars = replyChars): Promise<TaskMessageRow[]> {
  return t.deps.pool.transaction(async (tx) => {
    const rows: TaskMessageRow[] = [];
    for (let i = 0; i < count; i++) {
      const text = `${String(i).padStart(4, '0')} ${'x'.repeat(chars)}`;
      const row = await appendMessage(tx, {
        id: newId('msg'),
        workspaceId: tenant.workspaceId,
        taskId,
        role: 'assistant',
        text,
        projectId: tenant.projectId,
      });
      rows.push(row!);
    }
    return rows;
  });
}

const messageIds = (s: RawSse) =>
  s.events.filter((e) => e.event === 'message').map((e) => (JSON.parse(e.data) as { id: string }).id);
const isMessage = (id: string) => (e: RawSseEvent) =>
  e.event === 'message' && (JSON.parse(e.data) as { id: string }).id === id;

function leaseCount(): Promise<number> {
  return t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from stream_leases where workspace_id = ${tenant.workspaceId}
  `);
}

describe('a task stream whose reader stops reading', () => {
  it('buffers at most one event beyond a socket buffer, then catches up in order, without gaps or repeats', async () => {
    const server = await listenOnLoopback(
      makeApp({ ...t.deps, taskStream: { holdMs: 120_000, heartbeatMs: 50, stallMs: 120_000 } }),
    );
    try {
      const taskId = await newTask();
      const url = `${server.origin}${api(`/tasks/${taskId}/stream`)}`;
      const watched = nextServerResponse(server.server, api(`/tasks/${taskId}/stream`));
      const slow = await openRawSse(url, { headers: bearer(tenant.testKey) });
      expect(slow.status).toBe(200);
      const { res, maxBuffered } = await watched;
      slow.pause();
      // A second stream of the same task that reads all along.
      const reading = await openRawSse(url, { headers: bearer(tenant.testKey) });

      const first = await replies(taskId, replyCount);
      await reading.waitFor(isMessage(first.at(-1)!.id), 30_000);
      // The slow stream is paused by the feed; before the fix its buffer took every reply instead.
      await waitUntil(async () =>
        t.deps.taskReplyFeed.paused === 1 || res.writableLength > 1 << 20 ? true : undefined,
      );
      const bound = res.writableHighWaterMark + replyChars + 1024;
      expect(res.writableLength).toBeLessThanOrEqual(bound);

      // Replies and heartbeats while it is paused are not written for it: the reading stream gets
      // the next reply and three more heartbeats, the paused one's buffer stays as it was.
      const buffered = res.writableLength;
      const comments = reading.comments.length;
      const [later] = await replies(taskId, 1, 10);
      await reading.waitFor(isMessage(later!.id));
      await waitUntil(async () => (reading.comments.length >= comments + 3 ? true : undefined));
      expect(res.writableLength).toBe(buffered);
      expect(maxBuffered()).toBeLessThanOrEqual(bound);

      // Reading again, it gets every reply once, in order, from where it stopped.
      slow.resume();
      await slow.waitFor(isMessage(later!.id), 30_000);
      expect(messageIds(slow)).toEqual([...first.map((r) => r.id), later!.id]);
      expect(maxBuffered()).toBeLessThanOrEqual(bound);
      expect(t.deps.taskReplyFeed.paused).toBe(0);
      slow.close();
      reading.close();
      // Both readers gone, both leases are given back (the next test counts this workspace's leases).
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
    } finally {
      await server.close();
    }
  });

  it('is ended after it stays blocked past the stall bound, its connection cut and its lease freed', async () => {
    const stallMs = 300;
    const server = await listenOnLoopback(
      makeApp({ ...t.deps, taskStream: { holdMs: 120_000, heartbeatMs: 60_000, stallMs } }),
    );
    try {
      const taskId = await newTask();
      const path = api(`/tasks/${taskId}/stream`);
      const watched = nextServerResponse(server.server, path);
      const slow = await openRawSse(`${server.origin}${path}`, { headers: bearer(tenant.testKey) });
      expect(slow.status).toBe(200);
      const { res } = await watched;
      slow.pause();
      expect(await leaseCount()).toBe(1);
      const closed = new Promise<number>((resolve) => res.once('close', () => resolve(Date.now())));
      await replies(taskId, replyCount);
      // Blocked: after stallMs the stream is ended (done queued behind the replies), and when that
      // cannot be flushed either, the connection is cut, long before the hold would end it.
      const blockedAt = await waitUntil(async () =>
        t.deps.taskReplyFeed.paused === 1 ? Date.now() : undefined,
      );
      const closedAt = await closed;
      expect(closedAt - blockedAt).toBeLessThan(10_000);
      expect(res.writableEnded).toBe(true);
      // What the kernel had taken still arrives; the response itself never completes.
      slow.resume();
      expect(await slow.ended).toEqual({ complete: false });
      await waitUntil(async () => ((await leaseCount()) === 0 ? true : undefined));
      expect(t.deps.taskReplyFeed.size.subscribers).toBe(0);
    } finally {
      await server.close();
    }
  });
});
