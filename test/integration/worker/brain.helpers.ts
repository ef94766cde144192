import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

const pageRow = z.object({
  id: z.string(),
  slug: z.string(),
  title: z.string(),
  body: z.string(),
  revision: z.number(),
  synthesized_through_seq: z.number(),
  last_message_seq: z.number(),
});
export type TaskPageRow = z.infer<typeof pageRow>;

/** The task's page once it covers every message of the task (synthesised after its last reply). */
export function waitForCurrentPage(t: TestContext, taskId: string, timeoutMs = 60_000): Promise<TaskPageRow> {
  return waitUntil(async () => {
    const row = await t.deps.pool.maybeOne(sql.type(pageRow)`
      select p.id, p.slug, p.title, p.body, p.revision, p.synthesized_through_seq, t.last_message_seq
      from brain_pages p join tasks t on t.id = p.source_task_id
      where p.source_task_id = ${taskId}
    `);
    return row && row.synthesized_through_seq === row.last_message_seq ? row : undefined;
  }, timeoutMs);
}

/** The task's synthesis jobs still in graphile-worker's queue (pending or running). */
export function pendingSyntheses(t: TestContext, taskId: string) {
  return t.deps.pool.any(sql.type(z.object({ run_at: z.string() }))`
    select run_at::text from graphile_worker.jobs
    where task_identifier = 'brain__synthesize' and key = ${`brain:task:${taskId}`}
  `);
}

/** Creates a task and waits until its first reply has been written. */
export async function finishedTask(
  t: TestContext,
  key: string,
  title: string,
  input: string,
): Promise<string> {
  const created = await postAs(t.http, key, '/tasks').send({ title, input }).expect(202);
  const taskId = created.body.task.id as string;
  await waitForReplies(t, key, taskId, 2);
  return taskId;
}

export function waitForReplies(t: TestContext, key: string, taskId: string, count: number) {
  return waitUntil(async () => {
    const res = await t.http
      .get(api(`/tasks/${taskId}/messages`))
      .set(bearer(key))
      .expect(200);
    return res.body.data.length >= count ? true : undefined;
  }, 30_000);
}

export async function search(t: TestContext, key: string, query: string) {
  const res = await postAs(t.http, key, '/brain/search').send({ query }).expect(200);
  return res.body.results as {
    pageId: string;
    slug: string;
    title: string;
    score: number;
    snippet: string;
  }[];
}
