import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const taskRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  title: z.string(),
  last_message_seq: z.number(),
  /** The last message is an assistant message and no reply to the task is queued or running. */
  finished: z.boolean(),
  /** The last reply was made for a live key (false for test keys, and when its job is gone). */
  live: z.boolean(),
});

const messageRow = z.object({ seq: z.number(), role: z.enum(['user', 'assistant']), text: z.string() });
export type SourceMessage = z.infer<typeof messageRow>;

/**
 * A task as the brain reads it: whether its conversation is finished (see brain__synthesize), and
 * its latest completed messages, oldest first (failed replies are error notices, not knowledge).
 */
export async function loadTaskSource(db: Db, taskId: string, maxMessages: number) {
  const task = await db.maybeOne(sql.type(taskRow)`
    select t.id, t.workspace_id, t.title, t.last_message_seq,
           coalesce((select m.role = 'assistant' from task_messages m
                     where m.task_id = t.id and m.seq = t.last_message_seq), false)
           and not exists (select 1 from task_reply_queue r where r.task_id = t.id) as finished,
           coalesce((select j.livemode from task_messages m join jobs j on j.id = m.job_id
                     where m.task_id = t.id and m.seq = t.last_message_seq), false) as live
    from tasks t where t.id = ${taskId}
  `);
  if (!task) return null;
  const latest = await db.any(sql.type(messageRow)`
    select seq, role, text from task_messages
    where task_id = ${taskId} and status = 'completed'
    order by seq desc limit ${maxMessages}
  `);
  return { task, messages: [...latest].reverse() };
}
