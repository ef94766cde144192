import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { cursorKey, encodeCursor } from '../../../api/http/cursor.ts';
import { insertTaskMessage } from '../../../shared/db/queries/taskMessages.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, insertBareTask, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;
let taskId: string;
let otherTaskId: string;
const inserted: string[] = [];

const newTask = () => insertBareTask(t.deps.pool, tenant, 'Long thread');

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  taskId = await newTask();
  otherTaskId = await newTask();
  // 250 messages through the real insert (numbered under the task's row lock), alternating roles.
  for (let i = 0; i < 250; i++) {
    const row = await insertTaskMessage(t.deps.pool, {
      id: newId('msg'),
      workspaceId: tenant.workspaceId,
      taskId,
      role: i % 2 === 0 ? 'user' : 'assistant',
      text: `message ${i}`,
    });
    inserted.push(row!.id);
  }
  await insertTaskMessage(t.deps.pool, {
    id: newId('msg'),
    workspaceId: tenant.workspaceId,
    taskId: otherTaskId,
    role: 'user',
    text: 'x',
  });
});
afterAll(() => t.close());

type Page = {
  data: { id: string; text: string }[];
  messages: unknown[];
  nextCursor: string | null;
  hasMore: boolean;
};

async function page(query: Record<string, string | number>, http = t.http): Promise<Page> {
  const res = await http
    .get(api(`/tasks/${taskId}/messages`))
    .query(query)
    .set(bearer(tenant.testKey))
    .expect(200);
  return res.body as Page;
}

async function walk(limit: number | undefined): Promise<{ ids: string[]; pages: Page[] }> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const query: Record<string, string | number> = {};
    if (limit !== undefined) query.limit = limit;
    if (cursor !== null) query.cursor = cursor;
    const p = await page(query);
    pages.push(p);
    cursor = p.nextCursor;
  } while (cursor !== null);
  return { ids: pages.flatMap((p) => p.data.map((m) => m.id)), pages };
}

describe('GET /tasks/{taskId}/messages pagination', () => {
  it('walks 250 messages oldest first with no gaps or repeats (limit 100)', async () => {
    const { ids, pages } = await walk(100);
    expect(ids).toEqual(inserted);
    expect(pages.map((p) => p.data.length)).toEqual([100, 100, 50]);
    expect(pages.map((p) => p.hasMore)).toEqual([true, true, false]);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    for (const p of pages) expect(p.messages).toEqual(p.data);
    expect(pages[0]!.data[0]).toEqual({
      id: inserted[0],
      role: 'user',
      text: 'message 0',
      createdAt: expect.any(String),
    });
  });

  it('uses 50 as the default page size', async () => {
    const { ids, pages } = await walk(undefined);
    expect(ids).toEqual(inserted);
    expect(pages.map((p) => p.data.length)).toEqual([50, 50, 50, 50, 50]);
    expect(pages.map((p) => p.hasMore)).toEqual([true, true, true, true, false]);
  });

  it('walks with limit 1 and 7 as well', async () => {
    expect((await walk(7)).ids).toEqual(inserted);
    const single = await page({ limit: 1 });
    expect(single.data.map((m) => m.id)).toEqual([inserted[0]]);
    expect(single.hasMore).toBe(true);
  });

  it('accepts a cursor issued by another api instance (the signing secret is shared in the database)', async () => {
    const first = await page({ limit: 100 });
    const second = await t.secondApp();
    const next = await page({ limit: 100, cursor: first.nextCursor! }, second.http);
    expect(next.data[0]!.id).toBe(inserted[100]);
  });

  it('answers invalid_cursor for anything it did not issue for this task', async () => {
    const first = await page({ limit: 10 });
    const good = first.nextCursor!;
    const flipped = good.slice(0, 5) + (good[5] === 'A' ? 'B' : 'A') + good.slice(6);
    const key = await cursorKey(t.deps.pool);
    const forged = Buffer.from(good, 'base64url');
    forged.writeBigUInt64BE(1n, 2); // a different position with the original MAC
    const otherTask = await t.http
      .get(api(`/tasks/${otherTaskId}/messages`))
      .query({ cursor: good })
      .set(bearer(tenant.testKey))
      .expect(422);
    expect(otherTask.body.error.code).toBe('invalid_cursor');
    const streamCursor = encodeCursor(key, { purpose: 'stream', taskId, seq: 10 });
    for (const cursor of [
      'garbage',
      '',
      flipped,
      forged.toString('base64url'),
      good.slice(0, -1),
      `${good}A`,
      `${good}=`,
      streamCursor,
      Buffer.from(JSON.stringify({ seq: 10 })).toString('base64url'),
    ]) {
      const res = await t.http
        .get(api(`/tasks/${taskId}/messages`))
        .query({ cursor })
        .set(bearer(tenant.testKey));
      expect({ cursor, status: res.status, code: res.body.error?.code }).toEqual({
        cursor,
        status: 422,
        code: 'invalid_cursor',
      });
    }
  });

  it('bounds limit to 1..100', async () => {
    for (const limit of [0, 101, -1]) {
      const res = await t.http
        .get(api(`/tasks/${taskId}/messages`))
        .query({ limit })
        .set(bearer(tenant.testKey))
        .expect(422);
      expect(res.body.error.code).toBe('invalid_request_body');
    }
  });

  it('returns an empty last page for a task with no messages after the cursor', async () => {
    const all = await page({ limit: 100 });
    const second = await page({ limit: 100, cursor: all.nextCursor! });
    const last = await page({ limit: 100, cursor: second.nextCursor! });
    expect(last.data).toHaveLength(50);
    expect(last).toMatchObject({ hasMore: false, nextCursor: null });
  });
});
