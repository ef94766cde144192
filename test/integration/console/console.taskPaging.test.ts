import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { type FormClient, type Harness, startHarness } from '../oauth/harness.ts';

// A task's page without JavaScript: its media board and its messages, each followed link by link.
let h: Harness;
let client: FormClient;
const taskId = newId('task');
const otherTaskId = newId('task');
const boardSize = 140;
const messageCount = 120;

type BoardRow = { id: string; kind: 'video' | 'file'; created_at: string };

/** Videos and files alternating, two per second, so ties on created_at are broken by id. */
function boardRows(workspace: string, count: number): BoardRow[] {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: count }, (_, i) => ({
    id: `${i % 2 ? 'vid' : 'file'}_${workspace}_${String(i).padStart(3, '0')}`,
    kind: i % 2 ? 'video' : 'file',
    created_at: new Date(start + Math.floor(i / 2) * 1000).toISOString(),
  }));
}

async function insertBoard(workspaceId: string, task: string, rows: BoardRow[]): Promise<void> {
  const { pool } = h.t.deps;
  await pool.query(sql.typeAlias('void')`
    insert into files (id, workspace_id, filename, mime_type, size_bytes, storage_key, task_id, created_at)
    select id, ${workspaceId}, id || '.txt', 'text/plain', 1, 'paging/' || id, ${task}, created_at
    from jsonb_to_recordset(${sql.jsonb(rows)}) as r(id text, kind text, created_at timestamptz)
    where kind = 'file'
  `);
  await pool.query(sql.typeAlias('void')`
    insert into videos (id, workspace_id, task_id, title, prompt, aspect_ratio, resolution,
                        requested_duration_seconds, livemode, created_at)
    select id, ${workspaceId}, ${task}, id, 'a clip', '16:9', '720p', 4, false, created_at
    from jsonb_to_recordset(${sql.jsonb(rows)}) as r(id text, kind text, created_at timestamptz)
    where kind = 'video'
  `);
}

const unescapeHref = (href: string) => href.replaceAll('&amp;', '&');
const linkNamed = (page: string, text: string) =>
  new RegExp(`<a href="([^"]+)"\\s*>\\s*${text}\\s*</a`).exec(page)?.[1];

/** Follows a list's next links from `path`, collecting what `itemsOf` reads on each page. */
async function walk<T>(path: string, linkText: string, itemsOf: (page: string) => T[]) {
  const seen: T[] = [];
  const sizes: number[] = [];
  let next: string | undefined = path;
  while (next) {
    const page = await client.get(next);
    expect(page.status).toBe(200);
    const items = itemsOf(page.text);
    seen.push(...items);
    sizes.push(items.length);
    const href = linkNamed(page.text, linkText);
    next = href && unescapeHref(href);
  }
  return { seen, sizes };
}

const boardIds = (page: string) => [...page.matchAll(/<li data-(?:video|file)="([^"]+)"/g)].map((m) => m[1]!);
const messageSeqs = (page: string) => [...page.matchAll(/<li value="(\d+)">/g)].map((m) => Number(m[1]));

beforeAll(async () => {
  h = await startHarness();
  const { pool } = h.t.deps;
  for (const [id, workspaceId] of [
    [taskId, h.tenant.workspaceId],
    [otherTaskId, h.second.workspaceId],
  ] as const) {
    await pool.query(sql.typeAlias('void')`
      insert into tasks (id, workspace_id, title) values (${id}, ${workspaceId}, 'Paging')
    `);
  }
  await insertBoard(h.tenant.workspaceId, taskId, boardRows('a', boardSize));
  await insertBoard(h.second.workspaceId, otherTaskId, boardRows('b', 20));
  await pool.query(sql.typeAlias('void')`
    insert into task_messages (id, workspace_id, task_id, seq, role, text)
    select 'msg_paging_' || g, ${h.tenant.workspaceId}, ${taskId}, g, 'user', 'message ' || g
    from generate_series(1, ${messageCount}) g
  `);
  client = await h.signIn();
});
afterAll(async () => {
  await h.close();
});

describe("a task's page, paged by cursor without JavaScript", () => {
  it('shows every board item once, newest first, page by page, none of another workspace', async () => {
    const { seen, sizes } = await walk(
      `/console/${h.tenant.memberId}/tasks/${taskId}`,
      'Older videos and files',
      boardIds,
    );
    const expected = boardRows('a', boardSize)
      .sort((x, y) => y.created_at.localeCompare(x.created_at) || (x.id < y.id ? 1 : -1))
      .map((r) => r.id);
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(boardSize);
    expect(sizes).toEqual([50, 50, 40]);
    expect(seen.some((id) => id.includes('_b_'))).toBe(false);
  });

  it('shows every message once, in order, and a board link keeps the messages page', async () => {
    const base = `/console/${h.tenant.memberId}/tasks/${taskId}`;
    const { seen, sizes } = await walk(base, 'Later messages', messageSeqs);
    expect(seen).toEqual(Array.from({ length: messageCount }, (_, i) => i + 1));
    expect(sizes).toEqual([50, 50, 20]);
    // On the second page of messages, the board's next link stays on that page of messages.
    const first = await client.get(base);
    const secondMessages = unescapeHref(linkNamed(first.text, 'Later messages')!);
    const page = await client.get(secondMessages);
    expect(messageSeqs(page.text)[0]).toBe(51);
    const olderBoard = await client.get(unescapeHref(linkNamed(page.text, 'Older videos and files')!));
    expect(messageSeqs(olderBoard.text)[0]).toBe(51);
    expect(boardIds(olderBoard.text)).toHaveLength(50);
  });

  it("keeps another workspace's task out of reach, forged cursor or not", async () => {
    const other = await client.get(`/console/${h.tenant.memberId}/tasks/${otherTaskId}`);
    expect(other.status).toBe(404);
    const forged = Buffer.from(JSON.stringify(['2100-01-01T00:00:00Z', 'zzz'])).toString('base64url');
    const page = await client.get(`/console/${h.tenant.memberId}/tasks/${taskId}?board=${forged}`);
    expect(boardIds(page.text).every((id) => id.includes('_a_'))).toBe(true);
    expect(boardIds(page.text)).toHaveLength(50);
    // The same person's own console in the second workspace shows that task's board alone.
    const { seen } = await walk(
      `/console/${h.second.memberId}/tasks/${otherTaskId}`,
      'Older videos and files',
      boardIds,
    );
    expect(seen).toHaveLength(20);
    expect(seen.every((id) => id.includes('_b_'))).toBe(true);
  });
});
